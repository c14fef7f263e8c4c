package partition

// AppendDeferSync is Append without the fsyncs Append may do after the
// write: the leader-epoch checkpoint when the batches start a new epoch,
// and the flush when flush.messages are unflushed. It returns once the
// batches are in the log, with sync, which does those fsyncs; the caller
// must call it (and answer its error as Append's) after releasing any lock
// the request path or metadata application shares, so that a slow disk
// never holds such a lock (replication's producer-state lock is held across
// an idempotent append). sync is nil when the append failed.
//
// It must stay the same as Append up to the write: a change to how Append
// writes belongs here too.
func (l *Log) AppendDeferSync(records []byte, leaderEpoch int32) (AppendInfo, func() error, error) {
	hdrs, err := splitBatches(records)
	if err != nil {
		return AppendInfo{}, nil, err
	}
	if err := l.lockForAppend(); err != nil {
		return AppendInfo{}, nil, err
	}
	info, epochChanged, err := l.appendLocked(records, hdrs, leaderEpoch, true)
	due := l.flushDueLocked()
	leo := l.mu.leo
	l.mu.Unlock()
	if err != nil {
		return AppendInfo{}, nil, err
	}
	sync := func() error {
		_, err := l.afterAppend(info, epochChanged, due, leo, nil)
		return err
	}
	return info, sync, nil
}

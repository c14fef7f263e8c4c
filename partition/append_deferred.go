package partition

// AppendDeferSync is Append without the fsyncs Append may do after the
// write: the leader-epoch checkpoint when the batches start a new epoch,
// and the flush when flush.messages are unflushed. It returns once the
// batches are in the log, with a PendingSync whose Sync does those
// fsyncs; the caller must call it (and answer its error as Append's)
// after releasing any lock the request path or metadata application
// shares, so that a slow disk never holds such a lock (replication's producer-state lock is held across
// an idempotent append). Append is this followed by Sync.
func (l *Log) AppendDeferSync(records []byte, leaderEpoch int32) (AppendInfo, PendingSync, error) {
	hdrs, err := splitBatches(records)
	if err != nil {
		return AppendInfo{}, PendingSync{}, err
	}
	if err := l.ensureFiles(); err != nil {
		return AppendInfo{}, PendingSync{}, err
	}
	if err := l.lockForAppend(); err != nil {
		return AppendInfo{}, PendingSync{}, err
	}
	info, epochChanged, err := l.appendLocked(records, hdrs, leaderEpoch, true, false)
	due := l.flushDueLocked()
	leo := l.mu.leo
	l.mu.Unlock()
	if err != nil {
		return AppendInfo{}, PendingSync{}, err
	}
	return info, PendingSync{l: l, info: info, epochChanged: epochChanged, flushDue: due, leo: leo}, nil
}

// PendingSync is what an append left to fsync (AppendDeferSync). A value,
// not a closure, so that an append allocates nothing for it.
type PendingSync struct {
	l                      *Log
	info                   AppendInfo
	epochChanged, flushDue bool
	leo                    int64
}

// Sync does the append's fsyncs; the append counts only once it returns
// nil, as Append's own would.
func (p PendingSync) Sync() error {
	_, err := p.l.afterAppend(p.info, p.epochChanged, p.flushDue, p.leo, nil)
	return err
}

package partition

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Producer-state snapshots sit beside the segments as
// <20-digit end offset>.snapshot, as in Kafka's layout. The partition only
// stores and finds them; their content belongs to the idempotent package.
const producerSnapshotSuffix = ".snapshot"

// WriteProducerSnapshot stores data as the producer state up to end
// (atomically, fsynced) and removes older snapshots. A snapshot above the
// LEO is refused: it could only describe batches a truncation has just
// removed. The write holds lifeMu shared, so a truncation either precedes
// it (and the check refuses it) or waits for it (and removes it).
func (l *Log) WriteProducerSnapshot(end int64, data []byte) error {
	l.lifeMu.RLock()
	defer l.lifeMu.RUnlock()
	l.mu.Lock()
	closed, leo := l.mu.closed, l.mu.leo
	l.mu.Unlock()
	if closed {
		return ErrLogClosed
	}
	if end > leo {
		return fmt.Errorf("%w: producer snapshot at %d above log end offset %d", ErrOffsetOutOfRange, end, leo)
	}
	if l.lazy.Load() {
		return nil // empty, with no directory: nothing to describe
	}
	name := filepath.Join(l.dir(), segmentName(end)+producerSnapshotSuffix)
	if err := WriteFileAtomic(l.env.fs, name, data); err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	ends, err := l.producerSnapshots()
	if err != nil {
		return err
	}
	for _, e := range ends {
		if e != end {
			if err := l.env.fs.Remove(filepath.Join(l.dir(), segmentName(e)+producerSnapshotSuffix)); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeProducerSnapshotsAboveLocked deletes the snapshots whose end offset
// is above end (every one when end < 0), as Kafka does on truncation and
// on load: they describe batches that are no longer in the log, and would
// be trusted once the log grows past their offset again. The caller makes
// the removal durable (see syncTruncation).
func (l *Log) removeProducerSnapshotsAboveLocked(end int64) error {
	return l.removeSnapshotsAboveLocked(end, nil)
}

// removeSnapshotsAboveLocked is removeProducerSnapshotsAboveLocked given
// the snapshots in the directory, or nil to list them.
func (l *Log) removeSnapshotsAboveLocked(end int64, ends []int64) error {
	if ends == nil {
		var err error
		if ends, err = l.producerSnapshots(); err != nil {
			return err
		}
	}
	var errs []error
	for _, e := range ends {
		if e <= end {
			continue
		}
		l.logger().Info().Int64("snapshot", e).Int64("log_end_offset", end).Msg("removing producer snapshot above the log end")
		errs = append(errs, l.env.fs.Remove(filepath.Join(l.dir(), segmentName(e)+producerSnapshotSuffix)))
		l.mu.newSegments, l.mu.truncPending = true, true
	}
	return errors.Join(errs...)
}

// LatestProducerSnapshot returns the newest producer snapshot whose end
// offset is within [log start, LEO] — a snapshot past the LEO describes
// data lost to a crash or truncation and is ignored.
func (l *Log) LatestProducerSnapshot() (end int64, data []byte, ok bool, err error) {
	if l.lazy.Load() {
		return 0, nil, false, nil
	}
	ends, err := l.producerSnapshots()
	if err != nil {
		return 0, nil, false, err
	}
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	for i := len(ends) - 1; i >= 0; i-- {
		if ends[i] > leo || ends[i] < start {
			continue
		}
		data, exists, err := readWholeFile(l.env.fs, filepath.Join(l.dir(), segmentName(ends[i])+producerSnapshotSuffix))
		if err != nil || !exists {
			return 0, nil, false, err
		}
		return ends[i], data, true, nil
	}
	return 0, nil, false, nil
}

func (l *Log) producerSnapshots() ([]int64, error) {
	names, err := l.env.fs.ReadDir(l.dir())
	if err != nil {
		return nil, err
	}
	return producerSnapshotEnds(names), nil
}

// producerSnapshotEnds returns the end offsets of the producer snapshots among a
// directory's names, in order (empty, not nil).
func producerSnapshotEnds(names []string) []int64 {
	ends := []int64{}
	for _, n := range names {
		if !strings.HasSuffix(n, producerSnapshotSuffix) {
			continue
		}
		if e, ok := parseSegmentName(n, producerSnapshotSuffix); ok {
			ends = append(ends, e)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	return ends
}

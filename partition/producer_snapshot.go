package partition

import (
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
// (atomically, fsynced) and removes older snapshots.
func (l *Log) WriteProducerSnapshot(end int64, data []byte) error {
	name := filepath.Join(l.dir, segmentName(end)+producerSnapshotSuffix)
	if err := writeFileAtomic(l.fs, name, data); err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	ends, err := l.producerSnapshots()
	if err != nil {
		return err
	}
	for _, e := range ends {
		if e != end {
			if err := l.fs.Remove(filepath.Join(l.dir, segmentName(e)+producerSnapshotSuffix)); err != nil {
				return err
			}
		}
	}
	return nil
}

// LatestProducerSnapshot returns the newest producer snapshot whose end
// offset is within [log start, LEO] — a snapshot past the LEO describes
// data lost to a crash or truncation and is ignored.
func (l *Log) LatestProducerSnapshot() (end int64, data []byte, ok bool, err error) {
	ends, err := l.producerSnapshots()
	if err != nil {
		return 0, nil, false, err
	}
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	for i := len(ends) - 1; i >= 0; i-- {
		if ends[i] > leo || ends[i] < start {
			continue
		}
		data, exists, err := readWholeFile(l.fs, filepath.Join(l.dir, segmentName(ends[i])+producerSnapshotSuffix))
		if err != nil || !exists {
			return 0, nil, false, err
		}
		return ends[i], data, true, nil
	}
	return 0, nil, false, nil
}

func (l *Log) producerSnapshots() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var ends []int64
	for _, n := range names {
		if !strings.HasSuffix(n, producerSnapshotSuffix) {
			continue
		}
		if e, ok := parseSegmentName(n, producerSnapshotSuffix); ok {
			ends = append(ends, e)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	return ends, nil
}

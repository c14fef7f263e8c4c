package fake

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Log is an in-memory replica store this broker leads every partition of:
// batches get consecutive offsets and the high watermark follows the log
// end. It serves both the coordinators' append/read side (Append, Bounds,
// Read) and the share manager's fetch side (Leader, Fetch, ListOffset,
// HWMoved).
type Log struct {
	mu         sync.Mutex
	partitions map[partition.TopicPartition]*logPartition
	failAppend error
}

type logPartition struct {
	batches [][]byte
	leo     int64
	moved   chan struct{} // closed and replaced when leo moves
}

func NewLog() *Log {
	return &Log{partitions: map[partition.TopicPartition]*logPartition{}}
}

func (l *Log) part(tp partition.TopicPartition) *logPartition {
	p := l.partitions[tp]
	if p == nil {
		p = &logPartition{moved: make(chan struct{})}
		l.partitions[tp] = p
	}
	return p
}

// FailAppends makes every Append fail with err until it is called with nil.
func (l *Log) FailAppends(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failAppend = err
}

// Append validates batch as the leader would and appends it.
func (l *Log) Append(_ context.Context, tp partition.TopicPartition, batch []byte, _ time.Duration) error {
	l.mu.Lock()
	err := l.failAppend
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := partition.ValidateBatches(batch, 1<<20); err != nil {
		return err
	}
	l.Put(tp, batch)
	return nil
}

// Put appends batch unchecked (its records need not parse), setting its
// base offset to the log end, and returns that offset.
func (l *Log) Put(tp partition.TopicPartition, batch []byte) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.part(tp)
	h, _ := partition.ParseBatchHeader(batch)
	b := append([]byte(nil), batch...)
	base := p.leo
	binary.BigEndian.PutUint64(b, uint64(base))
	p.batches = append(p.batches, b)
	p.leo += int64(h.NumRecords)
	close(p.moved)
	p.moved = make(chan struct{})
	return base
}

func (l *Log) Bounds(tp partition.TopicPartition) (int64, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.part(tp)
	return 0, p.leo, p.leo, nil
}

// Read returns the batches holding offsets from offset up to maxOffset.
func (l *Log) Read(tp partition.TopicPartition, offset, maxOffset int64, _ int32) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.part(tp).batches {
		h, _ := partition.ParseBatchHeader(b)
		if h.LastOffset() >= offset && h.BaseOffset < maxOffset {
			out = append(out, b...)
		}
	}
	return out, nil
}

func (l *Log) Leader(partition.TopicPartition) (int32, bool) { return 0, true }

// Fetch answers every partition asked for with every batch from its
// offset on; the last stable offset is the high watermark.
func (l *Log) Fetch(_ context.Context, fp replication.FetchParams) []replication.FetchResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]replication.FetchResult, 0, len(fp.Partitions))
	for _, fpp := range fp.Partitions {
		p := l.part(fpp.TP)
		r := replication.FetchResult{HighWatermark: p.leo, LastStableOffset: p.leo, LogStartOffset: 0}
		for _, b := range p.batches {
			h, _ := partition.ParseBatchHeader(b)
			if h.LastOffset() >= fpp.Offset {
				r.Records = append(r.Records, b...)
			}
		}
		out = append(out, r)
	}
	return out
}

// ListOffset answers earliest (-2) with 0 and anything else with the log end.
func (l *Log) ListOffset(tp partition.TopicPartition, ts int64, _ int32, _ bool) (int64, int64, int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ts == -2 {
		return 0, -1, 0, nil
	}
	return l.part(tp).leo, -1, 0, nil
}

func (l *Log) HWMoved(tp partition.TopicPartition) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.part(tp).moved
}

// WaitEnd waits until tp's log end reaches at least leo, woken by each
// append rather than polling; it returns the log end or, after timeout,
// an error.
func (l *Log) WaitEnd(tp partition.TopicPartition, leo int64, timeout time.Duration) (int64, error) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		p := l.part(tp)
		end, moved := p.leo, p.moved
		l.mu.Unlock()
		if end >= leo {
			return end, nil
		}
		select {
		case <-moved:
		case <-deadline:
			return end, fmt.Errorf("log end of %s is %d after %v, want %d", tp, end, timeout, leo)
		}
	}
}

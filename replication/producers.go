package replication

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
)

// producers is a partition's idempotent-producer state (DESIGN rule 9).
// It is loaded lazily from the last snapshot plus the log after it, kept
// current by leader appends and replicated appends alike (so a new leader
// recognises a retry of a batch written under the old one), and dropped
// on truncation to be rebuilt from the log that remains.
//
// Lock order: Partition.roleMu → producers.mu → Partition.mu. mu is held
// across an idempotent batch's check, append and update, which is what
// makes "is this a retry?" and "append it" one step.
type producers struct {
	mu         sync.Mutex
	st         *idempotent.State // nil until loaded
	lastExpiry time.Time
	// expiry is producer.id.expiration.ms.
	expiry time.Duration
	// segments is how many segments the log had at the last snapshot: a
	// roll is when the state is snapshotted, as Kafka does, so that a
	// restart after a crash reads at most the active segment's batches.
	segments int
}

// batchOf turns a batch header into what producer state needs. The time
// recorded is the broker's, not the batch's: expiry measures how long a
// producer has been idle here, and a client replaying old timestamps must
// not have its state expire at once. (A state rebuilt from the log counts
// every producer as seen at the rebuild.)
func batchOf(h partition.BatchHeader, batch []byte) idempotent.Batch {
	b := idempotent.Batch{
		ProducerID:    h.ProducerID,
		Epoch:         h.ProducerEpoch,
		FirstSeq:      h.BaseSequence,
		LastSeq:       lastSequence(h.BaseSequence, h.LastOffsetDelta),
		Transactional: h.IsTransactional(),
		Control:       h.IsControl(),
		MaxTimestamp:  time.Now().UnixMilli(),
	}
	if h.ProducerID < 0 {
		b.ProducerID = idempotent.NoProducerID
	}
	if b.Control {
		b.Abort = isAbortMarker(batch)
		b.CoordinatorEpoch = markerCoordinatorEpoch(batch)
	}
	return b
}

// lastSequence adds a batch's offset delta to its base sequence, wrapping
// past MaxInt32 to 0 as producers do.
func lastSequence(base, delta int32) int32 {
	if base < 0 {
		return base
	}
	if base > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - base) - 1
	}
	return base + delta
}

// stateLocked returns the loaded state, loading it first if needed.
func (p *Partition) producerStateLocked() (*idempotent.State, error) {
	if p.prod.st != nil {
		return p.prod.st, nil
	}
	st := idempotent.NewState()
	from := p.log.LogStartOffset()
	if end, data, ok, err := p.log.LatestProducerSnapshot(); err != nil {
		return nil, err
	} else if ok {
		if snap, err := idempotent.UnmarshalSnapshot(data); err == nil && snap.End() == end {
			st, from = snap, end
		}
	}
	if err := scanProducers(p.log, st, from); err != nil {
		return nil, err
	}
	p.prod.st = st
	p.prod.segments = p.log.NumSegments()
	return st, nil
}

// scanProducers folds the batches of lg from offset from into st.
func scanProducers(lg *partition.Log, st *idempotent.State, from int64) error {
	for {
		leo := lg.LogEndOffset()
		if from >= leo {
			st.Advance(leo)
			return nil
		}
		ri, err := lg.Read(from, 1<<20, leo, true)
		if err != nil {
			if errors.Is(err, partition.ErrOffsetOutOfRange) {
				return nil
			}
			return fmt.Errorf("rebuilding producer state: %w", err)
		}
		if len(ri.Records) == 0 {
			return nil
		}
		next := from
		for b := ri.Records; len(b) > 0; {
			h, err := partition.ParseBatchHeader(b)
			if err != nil || h.Size() > len(b) {
				return fmt.Errorf("rebuilding producer state at offset %d: %v", next, err)
			}
			if h.LastOffset() >= from {
				st.Update(batchOf(h, b[:h.Size()]), h.BaseOffset, h.LastOffset())
			}
			next = max(next, h.LastOffset()+1)
			b = b[h.Size():]
		}
		if next <= from {
			return nil
		}
		from = next
	}
}

// producersAppended folds replicated batches into the state, if loaded.
func (p *Partition) producersAppended(records []byte) {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	if p.prod.st == nil {
		return
	}
	for b := records; len(b) > 0; {
		h, err := partition.ParseBatchHeader(b)
		if err != nil || h.Size() > len(b) {
			// Cannot happen for batches the log accepted; rebuild to be sure.
			p.prod.st = nil
			return
		}
		p.prod.st.Update(batchOf(h, b[:h.Size()]), h.BaseOffset, h.LastOffset())
		b = b[h.Size():]
	}
	p.prod.st.PruneCompleted(p.log.HighWatermark())
	p.snapshotOnRollLocked()
}

// producersTruncated drops the state after the log was truncated; it is
// rebuilt from what remains when next needed.
func (p *Partition) producersTruncated() {
	p.prod.mu.Lock()
	p.prod.st = nil
	p.prod.mu.Unlock()
}

// snapshotProducers writes the loaded state beside the log, so the next
// start reads the log only past it.
func (p *Partition) snapshotProducers() error {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	if p.prod.st == nil || p.prod.st.End() == 0 {
		return nil
	}
	return p.log.WriteProducerSnapshot(p.prod.st.End(), p.prod.st.MarshalSnapshot())
}

// expireProducersLocked forgets idle producers, at most once a minute.
func (p *Partition) expireProducersLocked(now time.Time) {
	if p.prod.st == nil || now.Sub(p.prod.lastExpiry) < time.Minute {
		return
	}
	p.prod.lastExpiry = now
	expiry := p.prod.expiry
	if expiry <= 0 {
		expiry = 24 * time.Hour
	}
	p.prod.st.Expire(now.UnixMilli(), expiry.Milliseconds())
}

// appendAsLeader appends a client's batch. An idempotent batch is first
// checked against the producer state: a retry of one already in the log
// is not appended again and dup is true, with the original offsets in
// info; a gap or an old epoch is refused.
func (p *Partition) appendAsLeader(records []byte, h partition.BatchHeader, leaderEpoch int32, opts AppendOptions) (info partition.AppendInfo, dup bool, err error) {
	if h.ProducerID < 0 {
		info, err = p.log.Append(records, leaderEpoch)
		return info, false, err
	}
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	st, err := p.producerStateLocked()
	if err != nil {
		return info, false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	b := batchOf(h, records)
	prev, err := st.Check(b)
	if err != nil {
		return info, false, err
	}
	if prev == nil && b.Transactional && !b.Control && opts.VerifyTxn != nil && !st.InTxn(b.ProducerID, b.Epoch) {
		if err := opts.VerifyTxn(); err != nil {
			return info, false, err
		}
	}
	if prev != nil {
		return partition.AppendInfo{
			FirstOffset: prev.FirstOffset, LastOffset: prev.LastOffset, LogAppendTime: -1,
			LogStartOffset: p.log.LogStartOffset(), MaxTimestamp: prev.Timestamp, NumRecords: prev.LastOffset - prev.FirstOffset + 1,
		}, true, nil
	}
	info, err = p.log.Append(records, leaderEpoch)
	if err != nil {
		return info, false, err
	}
	st.Update(b, info.FirstOffset, info.LastOffset)
	st.PruneCompleted(p.log.HighWatermark())
	p.expireProducersLocked(time.Now())
	p.snapshotOnRollLocked()
	return info, false, nil
}

// snapshotOnRollLocked writes a snapshot when the log has rolled a new
// segment since the last one.
func (p *Partition) snapshotOnRollLocked() {
	if p.prod.st == nil {
		return
	}
	n := p.log.NumSegments()
	if n <= p.prod.segments {
		p.prod.segments = n
		return
	}
	p.prod.segments = n
	if p.prod.st.End() == 0 {
		return
	}
	// A failed snapshot only costs a longer rebuild after a crash.
	_ = p.log.WriteProducerSnapshot(p.prod.st.End(), p.prod.st.MarshalSnapshot())
}

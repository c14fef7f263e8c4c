package replication

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
)

// producers is a partition's idempotent-producer state (DESIGN rule 9).
// It is kept current by leader appends and replicated appends alike (so a
// new leader recognises a retry of a batch written under the old one),
// dropped on truncation, and (re)built from the last snapshot plus the log
// after it by a background load (loadProducers) — never under a lock: a
// rebuild reads the log, which for a large partition with no recent
// snapshot takes long, and role changes (applied on the metadata
// goroutine) and the follower fetcher must not wait for it. Until the
// load is done, a leader refuses idempotent produce with a retriable
// NOT_LEADER_OR_FOLLOWER (ErrProducerStateLoading) after waiting for it
// at most the produce's timeout.
//
// Lock order: Partition.roleMu → Partition.followMu → producers.mu →
// Partition.mu. mu is held
// across an idempotent batch's check, append and update, which is what
// makes "is this a retry?" and "append it" one step; never across an
// fsync (snapshots are written after it is released, and the append's
// flush too) nor across a rebuild. snapMu serialises snapshot writes with
// each other and with truncation; only snapshot writers and truncation
// take it, never the request path while it waits; it comes before mu.
//
// Followers keep the state as Kafka's do: a follower loads it in the
// background when it starts following and again after a truncation, and
// keeps it current as it appends, so that a failover finds it ready.
type producers struct {
	mu sync.Mutex
	st *idempotent.State // nil until loaded
	// gen counts truncations: a load or a snapshot made from the log as
	// it was before one is discarded.
	gen uint64
	// load is the current or last background load, nil if none started
	// since the state was last dropped.
	load *producerLoad
	// lastExpiryMs is when idle producers were last expired, in
	// milliseconds of the manager's clock; 0 if never.
	lastExpiryMs int64
	// segments is how many segments the log had at the last snapshot: a
	// roll is when the state is snapshotted, as Kafka does, so that a
	// restart after a crash reads at most the active segment's batches.
	segments int32
	// writing is set while one goroutine writes staged snapshots.
	writing bool
	// staged is a snapshot to write once mu is released.
	staged *stagedSnapshot

	snapMu sync.Mutex
	// written is the end of the last snapshot written (guarded by
	// snapMu): an older one arriving late is not written over it.
	written int64
}

// producerLoad is one background load of the producer state.
type producerLoad struct {
	done chan struct{} // closed when the load ends
	err  error         // set before done is closed
}

type stagedSnapshot struct {
	gen  uint64
	end  int64
	data []byte
}

// ErrProducerStateLoading answers an idempotent produce (and a
// read_committed read) while the partition's producer state is being
// loaded. It is NOT_LEADER_OR_FOLLOWER for clients: retriable, and what
// Kafka answers for a partition that is not yet online on its leader.
var ErrProducerStateLoading = fmt.Errorf("%w: producer state is being loaded", ErrNotLeaderOrFollower)

// maxProducerLoads bounds the loads running at once on a broker, like
// Kafka's num.recovery.threads.per.data.dir (default 2) bounds its log
// loading: each reads up to 1 MiB of log at a time.
const maxProducerLoads = 2

// batchOf turns a batch header into what producer state needs. The time
// recorded is the broker's, not the batch's: expiry measures how long a
// producer has been idle here, and a client replaying old timestamps must
// not have its state expire at once. (A state rebuilt from the log counts
// every producer as seen at the rebuild.)
func batchOf(h partition.BatchHeader, batch []byte, nowMs int64) idempotent.Batch {
	b := idempotent.Batch{
		ProducerID:    h.ProducerID,
		Epoch:         h.ProducerEpoch,
		FirstSeq:      h.BaseSequence,
		LastSeq:       lastSequence(h.BaseSequence, h.LastOffsetDelta),
		Transactional: h.IsTransactional(),
		Control:       h.IsControl(),
		MaxTimestamp:  nowMs,
	}
	if h.ProducerID < 0 {
		b.ProducerID = idempotent.NoProducerID
	}
	if b.Control {
		m, _ := partition.ReadControlMarker(batch)
		b.Abort = !m.Commit
		b.CoordinatorEpoch = m.CoordinatorEpoch
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

// producerStateLocked returns the loaded state. When it is not loaded it
// makes sure a background load is under way and returns
// ErrProducerStateLoading and that load, which the caller may wait for
// after releasing its locks (see waitProducers); NOT_LEADER_OR_FOLLOWER
// if the manager is closed and no load can start.
func (p *Partition) producerStateLocked() (*idempotent.State, *producerLoad, error) {
	if p.prod.st != nil {
		return p.prod.st, nil, nil
	}
	ld := p.prod.load
	if ld == nil || ld.finished() {
		ld = &producerLoad{done: make(chan struct{})}
		gen := p.prod.gen
		if p.env == nil || p.env.spawn == nil || !p.env.spawn(func(ctx context.Context) { p.loadProducers(ctx, gen, ld) }) {
			return nil, nil, fmt.Errorf("%w: replica manager closed", ErrNotLeaderOrFollower)
		}
		p.prod.load = ld
	}
	return nil, ld, ErrProducerStateLoading
}

func (ld *producerLoad) finished() bool {
	select {
	case <-ld.done:
		return true
	default:
		return false
	}
}

// startProducerLoad starts loading the state in the background if it is
// not loaded, so that it is ready by the first idempotent produce.
func (p *Partition) startProducerLoad() {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	_, _, _ = p.producerStateLocked()
}

// waitProducers waits, holding no lock, for ld to end, at most wait and
// while ctx lasts. It returns nil when the caller should look again,
// ErrStorage if the load failed, ErrProducerStateLoading if it is still
// running.
func waitProducers(ctx context.Context, ld *producerLoad, wait time.Duration) error {
	if wait <= 0 {
		return ErrProducerStateLoading
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ld.done:
		if ld.err != nil {
			return fmt.Errorf("%w: loading producer state: %v", ErrStorage, ld.err)
		}
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return ErrProducerStateLoading
}

// lockProducers returns the loaded state with p.prod.mu held, waiting for
// a load (with no lock held) at most wait. On error mu is not held.
func (p *Partition) lockProducers(ctx context.Context, wait time.Duration) (*idempotent.State, error) {
	start := p.now()
	for {
		p.prod.mu.Lock()
		st, ld, err := p.producerStateLocked()
		if err == nil {
			return st, nil
		}
		p.prod.mu.Unlock()
		if ld == nil {
			return nil, err
		}
		if err := waitProducers(ctx, ld, wait-p.now().Sub(start)); err != nil {
			return nil, err
		}
	}
}

// loadProducers rebuilds the state from the last snapshot and the log
// past it, holding no lock while it reads; it is the only place the state
// is built. Records appended while it reads are read in further passes;
// only the few appended during the last pass are read under mu, which
// also installs the state. A truncation meanwhile (gen moved) ends it
// without a state; its waiters then look again and start a new one.
func (p *Partition) loadProducers(ctx context.Context, gen uint64, ld *producerLoad) {
	var err error
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic loading producer state: %v", r)
		}
		if err != nil {
			p.prod.mu.Lock()
			if p.prod.load == ld {
				p.prod.load = nil
			}
			p.prod.mu.Unlock()
		}
		ld.err = err
		close(ld.done)
	}()
	st, from, snapEnd, err := p.readProducerSnapshot()
	if err != nil {
		return
	}
	for pass := 0; ; pass++ {
		if err = scanProducers(ctx, p.log, st, from, p.now); err != nil {
			return
		}
		p.prod.mu.Lock()
		if p.prod.gen != gen {
			// Truncated meanwhile: whoever needs the state next starts
			// a load of the log as it is now.
			p.prod.mu.Unlock()
			return
		}
		if st.End() < p.log.LogEndOffset() && pass < 3 {
			from = st.End()
			p.prod.mu.Unlock()
			continue
		}
		// What is left was appended during the last pass.
		installed := false
		if err = scanProducers(ctx, p.log, st, st.End(), p.now); err == nil && p.prod.st == nil {
			p.prod.st = st
			p.prod.segments = int32(p.log.NumSegments())
			installed = true
			if p.prod.load == ld {
				// Nobody needs it once the state is in place (its
				// waiters hold their own reference): an idle partition
				// keeps no finished load and its channel.
				p.prod.load = nil
			}
		}
		p.prod.mu.Unlock()
		if installed && snapEnd > 0 {
			p.noteSnapshotOnDisk(gen, st, snapEnd)
		}
		return
	}
}

// noteSnapshotOnDisk records that the snapshot the state st was loaded
// from, at end, is on disk, so that a Close with nothing appended since
// does not write it again (Kafka skips such a snapshot too), unless a
// truncation replaced st meanwhile.
func (p *Partition) noteSnapshotOnDisk(gen uint64, st *idempotent.State, end int64) {
	p.prod.snapMu.Lock()
	defer p.prod.snapMu.Unlock()
	p.prod.mu.Lock()
	same := p.prod.gen == gen && p.prod.st == st
	p.prod.mu.Unlock()
	if same && end > p.prod.written {
		p.prod.written = end
	}
}

// readProducerSnapshot returns the state of the latest valid snapshot, the
// offset to read the log from and the snapshot's end offset, or an empty
// state, the log start and -1.
func (p *Partition) readProducerSnapshot() (*idempotent.State, int64, int64, error) {
	st := idempotent.NewState()
	from, snapEnd := p.log.LogStartOffset(), int64(-1)
	end, data, ok, err := p.log.LatestProducerSnapshot()
	if err != nil {
		return nil, 0, -1, err
	}
	if ok {
		if snap, err := idempotent.UnmarshalSnapshot(data); err == nil && snap.End() == end {
			st, from, snapEnd = snap, end, end
		}
	}
	return st, from, snapEnd, nil
}

// scanProducers folds the batches of lg from offset from into st, stamped
// with now.
func scanProducers(ctx context.Context, lg *partition.Log, st *idempotent.State, from int64, now func() time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		leo := lg.LogEndOffset()
		if from >= leo {
			st.Advance(leo)
			return nil
		}
		ri, err := lg.Read(from, 1<<20, leo, true)
		if err != nil {
			if errors.Is(err, partition.ErrOffsetOutOfRange) {
				if ls := lg.LogStartOffset(); from < ls {
					// Deleted meanwhile (retention, DeleteRecords): what
					// is gone has no producers to remember.
					from = ls
					continue
				}
				// Truncated meanwhile: the caller sees gen move.
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
				st.Update(batchOf(h, b[:h.Size()], now().UnixMilli()), h.BaseOffset, h.LastOffset())
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
// Batches below the state's end were already read by a load that ran
// between the append and this call.
func (p *Partition) producersAppended(records []byte) {
	p.foldReplicated(records)
	p.writeStagedSnapshots()
}

func (p *Partition) foldReplicated(records []byte) {
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
			p.prod.load = nil
			return
		}
		if h.LastOffset() >= p.prod.st.End() {
			p.prod.st.Update(batchOf(h, b[:h.Size()], p.now().UnixMilli()), h.BaseOffset, h.LastOffset())
		}
		b = b[h.Size():]
	}
	p.prod.st.PruneCompleted(p.log.HighWatermark())
	p.stageSnapshotOnRollLocked()
}

// producersTruncated drops the state around a truncation of the log: the
// caller calls it before truncating and again after, so that no load or
// snapshot made from the log as it was survives. It waits for a snapshot
// write in progress, so none lands after the truncation.
func (p *Partition) producersTruncated() {
	p.prod.mu.Lock()
	p.prod.st = nil
	p.prod.load = nil
	p.prod.gen++
	p.prod.staged = nil
	p.prod.mu.Unlock()
	p.prod.snapMu.Lock()
	p.prod.written = 0
	p.prod.snapMu.Unlock()
}

// snapshotProducers writes the loaded state beside the log, so the next
// start reads the log only past it.
func (p *Partition) snapshotProducers() error {
	p.prod.mu.Lock()
	if p.prod.st == nil || p.prod.st.End() == 0 {
		p.prod.mu.Unlock()
		return nil
	}
	s := &stagedSnapshot{gen: p.prod.gen, end: p.prod.st.End(), data: p.prod.st.MarshalSnapshot()}
	p.prod.staged = nil
	p.prod.mu.Unlock()
	return p.writeSnapshot(s)
}

// writeSnapshot writes s unless the log was truncated since it was made
// or a newer snapshot is already written. No lock but snapMu is held.
func (p *Partition) writeSnapshot(s *stagedSnapshot) error {
	p.prod.snapMu.Lock()
	defer p.prod.snapMu.Unlock()
	p.prod.mu.Lock()
	stale := s.gen != p.prod.gen
	p.prod.mu.Unlock()
	if stale || s.end <= p.prod.written {
		return nil
	}
	if err := p.log.WriteProducerSnapshot(s.end, s.data); err != nil {
		return err
	}
	p.prod.written = s.end
	return nil
}

// writeStagedSnapshots writes the snapshot staged under mu, if any, after
// mu was released. One goroutine writes at a time; a snapshot staged
// meanwhile is written by it before it stops.
func (p *Partition) writeStagedSnapshots() {
	p.prod.mu.Lock()
	if p.prod.writing {
		p.prod.mu.Unlock()
		return
	}
	p.prod.writing = true
	for p.prod.staged != nil {
		s := p.prod.staged
		p.prod.staged = nil
		p.prod.mu.Unlock()
		// A failed snapshot only costs a longer rebuild after a crash.
		_ = p.writeSnapshot(s)
		p.prod.mu.Lock()
	}
	p.prod.writing = false
	p.prod.mu.Unlock()
}

// expireProducersLocked forgets idle producers, at most once a minute.
func (p *Partition) expireProducersLocked(now time.Time) {
	nowMs := now.UnixMilli()
	if p.prod.st == nil || (p.prod.lastExpiryMs != 0 && nowMs-p.prod.lastExpiryMs < time.Minute.Milliseconds()) {
		return
	}
	p.prod.lastExpiryMs = nowMs
	expiry := p.env.expiry
	if expiry <= 0 {
		expiry = 24 * time.Hour
	}
	p.prod.st.Expire(now.UnixMilli(), expiry.Milliseconds())
}

// appendAsLeader appends a client's batch. An idempotent batch is first
// checked against the producer state: a retry of one already in the log
// is not appended again and dup is true, with the original offsets in
// info; a gap or an old epoch is refused. While the state is loading it
// returns ErrProducerStateLoading and the load to wait for (after the
// caller released roleMu).
func (p *Partition) appendAsLeader(records []byte, h partition.BatchHeader, leaderEpoch int32, opts AppendOptions) (info partition.AppendInfo, dup bool, ld *producerLoad, err error) {
	if h.ProducerID < 0 {
		info, err = p.log.Append(records, leaderEpoch)
		return info, false, nil, err
	}
	p.prod.mu.Lock()
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			p.prod.mu.Unlock()
		}
	}
	defer unlock()
	st, ld, err := p.producerStateLocked()
	if err != nil {
		return info, false, ld, err
	}
	b := batchOf(h, records, p.now().UnixMilli())
	prev, err := st.Check(b)
	if err != nil {
		return info, false, nil, err
	}
	if prev == nil && b.Transactional && !b.Control && opts.VerifyTxn != nil && !st.InTxn(b.ProducerID, b.Epoch) {
		if err := opts.VerifyTxn(); err != nil {
			return info, false, nil, err
		}
	}
	if prev != nil {
		return partition.AppendInfo{
			FirstOffset: prev.FirstOffset, LastOffset: prev.LastOffset, LogAppendTime: -1,
			LogStartOffset: p.log.LogStartOffset(), MaxTimestamp: prev.Timestamp, NumRecords: prev.LastOffset - prev.FirstOffset + 1,
		}, true, nil, nil
	}
	info, sync, err := p.log.AppendDeferSync(records, leaderEpoch)
	if err != nil {
		return info, false, nil, err
	}
	st.Update(b, info.FirstOffset, info.LastOffset)
	st.PruneCompleted(p.log.HighWatermark())
	p.expireProducersLocked(p.now())
	p.stageSnapshotOnRollLocked()
	unlock()
	// The fsyncs of the append (flush.messages, a new epoch's checkpoint)
	// and the snapshot write happen with the producer-state lock released.
	// The HW cannot pass the batch before the caller hears of it, after
	// this; a retry arriving meanwhile is answered as a duplicate.
	if err := sync.Sync(); err != nil {
		return partition.AppendInfo{}, false, nil, err
	}
	p.writeStagedSnapshots()
	return info, false, nil, nil
}

// stageSnapshotOnRollLocked stages a snapshot when the log has rolled a
// new segment since the last one; writeStagedSnapshots writes it once mu
// is released.
func (p *Partition) stageSnapshotOnRollLocked() {
	if p.prod.st == nil {
		return
	}
	n := int32(p.log.NumSegments())
	if n <= p.prod.segments {
		p.prod.segments = n
		return
	}
	p.prod.segments = n
	if p.prod.st.End() == 0 {
		return
	}
	p.prod.staged = &stagedSnapshot{gen: p.prod.gen, end: p.prod.st.End(), data: p.prod.st.MarshalSnapshot()}
}

package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/internal/kafkaerr"
	"github.com/gokafka/gokafka/partition"
)

// Errors the handlers answer with; each wraps its Kafka error.
var (
	ErrUnknownTopicOrPartition      = kafkaerr.New(kerr.UnknownTopicOrPartition, "unknown topic or partition")
	ErrNotLeaderOrFollower          = kafkaerr.New(kerr.NotLeaderForPartition, "not leader or follower")
	ErrFencedLeaderEpoch            = kafkaerr.New(kerr.FencedLeaderEpoch, "fenced leader epoch")
	ErrUnknownLeaderEpoch           = kafkaerr.New(kerr.UnknownLeaderEpoch, "unknown leader epoch")
	ErrNotEnoughReplicas            = kafkaerr.New(kerr.NotEnoughReplicas, "not enough replicas")
	ErrNotEnoughReplicasAfterAppend = kafkaerr.New(kerr.NotEnoughReplicasAfterAppend, "not enough replicas after append")
	ErrRequestTimedOut              = kafkaerr.New(kerr.RequestTimedOut, "request timed out")
	ErrStorage                      = kafkaerr.New(kerr.KafkaStorageError, "kafka storage error")
	// ErrOffsetNotAvailable (OFFSET_NOT_AVAILABLE, retriable): a new
	// leader's HW has not yet reached the start of its epoch, so "latest"
	// would be below what the previous leader already reported (KIP-207).
	// It wraps the Kafka code itself, which the handlers pass through.
	ErrOffsetNotAvailable = fmt.Errorf("%w: high watermark is behind the start of the leader epoch", kerr.OffsetNotAvailable)
)

// Partition is one hosted partition, led or followed by this broker.
type Partition struct {
	TP  partition.TopicPartition
	log *partition.Log
	// env is what all the manager's partitions share: its clock, its
	// logger (logger adds the partition's fields when something is
	// logged, so that thousands of idle partitions do not each keep a
	// logger of their own) and the producer state's settings. One
	// pointer instead of four fields a partition.
	env *partitionEnv

	// roleMu is held shared across a leader append (from the leadership
	// check to the end of the write) and exclusively by role changes, so
	// that no produce lands in a log that has just become a follower and
	// is about to be truncated (Kafka's leaderIsrUpdateLock).
	roleMu sync.RWMutex
	// followMu is held (inside roleMu, shared) by a follower fetcher while
	// it writes the log, so that the fetchers of an old and a new leader
	// never write it at once; see fetcher.withPartition.
	followMu sync.Mutex

	// prod is the idempotent-producer state; see producers.go.
	prod producers

	// followerThrottled is set when the topic's
	// follower.replication.throttled.replicas names this replica
	// (throttle.go).
	followerThrottled atomic.Bool
	// leaderThrottled: leader.replication.throttled.replicas names it.
	leaderThrottled atomic.Bool

	mu struct {
		sync.Mutex
		leaderEpoch    int32
		partitionEpoch int32
		leader         int32
		isLeader       bool
		replicas       []int32
		// isr is the metadata's ISR while following. While leading, st
		// alone holds the ISR, min.insync.replicas and where the epoch
		// started.
		isr []int32
		// st is the ISR/HW state machine while this broker leads; nil
		// otherwise.
		st *leaderState
		// replicaEpochs holds each follower's broker epoch from its
		// latest fetch (KIP-903; -1 if it sent none).
		replicaEpochs replicaEpochs
		// sessions are the followers' fetch sessions this partition
		// belongs to (session.go), marked dirty on the same changes; a
		// few at most (one per follower, more only briefly).
		sessions []*SessionWatch
		// busy holds what only a partition with traffic, waiters or
		// ISR changes uses; nil until the first of them (most of
		// 10,000 idle partitions never need it).
		busy *partitionBusy
	}
}

// replicaSets hands out one shared copy of each replica list: thousands
// of partitions over a few brokers have a few distinct replica sets and
// ISRs, and a copy each cost every partition two allocations. The lists
// it returns are never modified.
type replicaSets struct {
	mu   sync.Mutex
	sets map[string][]int32
}

// maxReplicaSets bounds the table; past it, it starts afresh (the lists
// handed out stay valid).
const maxReplicaSets = 4096

// get returns a shared list equal to ids.
func (r *replicaSets) get(ids []int32) []int32 {
	if len(ids) == 0 {
		return slices.Clone(ids)
	}
	var buf [64]byte
	key := buf[:0]
	for _, id := range ids {
		key = binary.LittleEndian.AppendUint32(key, uint32(id))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sets[string(key)]; ok {
		return s
	}
	if r.sets == nil || len(r.sets) >= maxReplicaSets {
		r.sets = make(map[string][]int32)
	}
	s := slices.Clone(ids)
	r.sets[string(key)] = s
	return s
}

// partitionEnv is what every partition of a Manager shares.
type partitionEnv struct {
	// now is the manager's clock.
	now func() time.Time
	// log is the manager's logger.
	log *zerolog.Logger
	// expiry is producer.id.expiration.ms.
	expiry time.Duration
	// spawn runs a background load of the producer state; false if the
	// manager is closed.
	spawn func(func(ctx context.Context)) bool
}

// partitionBusy is the part of a partition's mu-guarded state that idle
// partitions do without; see Partition.busyLocked.
type partitionBusy struct {
	// waiters are parked acks=all produces by id; st decides when each
	// completes. Buffered (1) channels. Made by the first.
	waiters map[uint64]chan error
	// proposalEpochs are the epochs of the ISR members of proposal
	// proposalSeq of state machine proposalFrom, taken with the fetch
	// positions that justified it, for its AlterPartition.
	proposalFrom   *leaderState
	proposalSeq    uint64
	proposalEpochs []int64
	// hwMoved is closed whenever the high watermark, the log start
	// offset or the role changes (HWMoved, for share fetches and the
	// coordinators' log readers). It is made when asked for and dropped
	// when closed, so that a change nobody waits for (nearly every
	// acks=all produce) allocates nothing.
	hwMoved chan struct{}
	// fetchWaiters are the parked fetches reading this partition,
	// signalled on the changes notifyLocked names.
	fetchWaiters map[*fetchWaiter]struct{}
}

// busyLocked returns the partition's busy state, making it. Under p.mu.
func (p *Partition) busyLocked() *partitionBusy {
	if p.mu.busy == nil {
		p.mu.busy = &partitionBusy{}
	}
	return p.mu.busy
}

// now reads the manager's clock.
func (p *Partition) now() time.Time { return p.env.now() }

// newPartition returns the replica state of tp over its log lg, neither
// leading nor following yet.
func (m *Manager) newPartition(tp partition.TopicPartition, lg *partition.Log) *Partition {
	p := &Partition{TP: tp, log: lg, env: &m.penv}
	p.mu.leaderEpoch = -1
	p.mu.leader = -1
	return p
}

// Log returns the partition's log.
func (p *Partition) Log() *partition.Log { return p.log }

// LeaderEpoch returns the current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.leaderEpoch
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.isLeader
}

// ISR returns the ISR this broker knows: the committed one while leading,
// the metadata's otherwise.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.st != nil {
		return slices.Clone(p.mu.st.ISR())
	}
	return slices.Clone(p.mu.isr)
}

// watch makes w signalled by this partition's changes until unwatch.
func (p *Partition) watch(w *fetchWaiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.busyLocked()
	if b.fetchWaiters == nil {
		b.fetchWaiters = make(map[*fetchWaiter]struct{})
	}
	b.fetchWaiters[w] = struct{}{}
}

func (p *Partition) unwatch(w *fetchWaiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.mu.busy; b != nil {
		delete(b.fetchWaiters, w)
	}
}

// notifyLocked wakes parked fetches: consumers' when their view changed
// (the HW, a role, the log start), followers' when they have something to
// fetch (the LEO moved) or must hear of a change at once (a role, the log
// start, the ISR).
//
// A move of the HW alone does not wake followers, as in Kafka since
// KAFKA-9952: that would double their fetches (one for the records, one
// more for the HW those records moved). They learn the HW with the next
// records or when their fetch's max wait ends.
func (p *Partition) notifyLocked(followers, consumers bool) {
	if b := p.mu.busy; b != nil {
		if consumers && b.hwMoved != nil {
			close(b.hwMoved)
			b.hwMoved = nil
		}
		for w := range b.fetchWaiters {
			w.changed.Store(true)
			if (w.replica && followers) || (!w.replica && consumers) {
				w.signal()
			}
		}
	}
	for _, w := range p.mu.sessions {
		w.markDirty(p.TP, followers)
	}
}

// checkEpochLocked applies KIP-320: a request's current leader epoch older
// than ours is fenced; a newer one means our metadata is behind. -1 skips
// it.
func (p *Partition) checkEpochLocked(current int32) error {
	switch {
	case current < 0:
		return nil
	case current < p.mu.leaderEpoch:
		return ErrFencedLeaderEpoch
	case current > p.mu.leaderEpoch:
		return ErrUnknownLeaderEpoch
	}
	return nil
}

// applyLocked carries out what the state machine asked for, except sending
// a proposal, which the caller does after unlocking (see afterUnlock).
func (p *Partition) applyLocked(eff Effects) *ISRProposal {
	if eff.HWChanged {
		p.log.SetHighWatermark(eff.HW)
		p.notifyLocked(false, true)
	}
	if b := p.mu.busy; b != nil {
		for _, d := range eff.Done {
			if ch, ok := b.waiters[d.ID]; ok {
				delete(b.waiters, d.ID)
				ch <- d.Err
			}
		}
	}
	if eff.Propose != nil {
		b := p.busyLocked()
		if b.proposalFrom != p.mu.st || eff.Propose.Seq != b.proposalSeq {
			// A proposal sent again keeps the epochs it was made with.
			b.proposalFrom, b.proposalSeq = p.mu.st, eff.Propose.Seq
			b.proposalEpochs = make([]int64, len(eff.Propose.NewISR))
			for i, id := range eff.Propose.NewISR {
				b.proposalEpochs[i] = p.mu.replicaEpochs.get(id)
			}
		}
	}
	return eff.Propose
}

// noteReplicaEpoch records the broker epoch a follower's fetch carried.
// Registration offsets start at 1, so 0 (a fetch that did not say) is
// unknown like -1.
func (p *Partition) noteReplicaEpoch(id int32, epoch int64) {
	p.mu.Lock()
	p.noteReplicaEpochLocked(id, epoch)
	p.mu.Unlock()
}

func (p *Partition) noteReplicaEpochLocked(id int32, epoch int64) {
	if epoch <= 0 {
		epoch = -1
	}
	p.mu.replicaEpochs.set(id, epoch)
}

// replicaEpochs maps a follower to its broker epoch: a few followers a
// partition, so a slice (a map costs every led partition a few hundred
// bytes).
type replicaEpochs []replicaEpoch

type replicaEpoch struct {
	id    int32
	epoch int64
}

// get returns id's epoch, -1 if unknown.
func (r replicaEpochs) get(id int32) int64 {
	for _, e := range r {
		if e.id == id {
			return e.epoch
		}
	}
	return -1
}

func (r *replicaEpochs) set(id int32, epoch int64) {
	for i := range *r {
		if (*r)[i].id == id {
			(*r)[i].epoch = epoch
			return
		}
	}
	*r = append(*r, replicaEpoch{id: id, epoch: epoch})
}

// endOffsetForEpochLocked answers OffsetForLeaderEpoch from the log's
// epoch cache, as if the current leader epoch had been assigned at the LEO
// when this broker became leader. Kafka assigns it at that moment
// (maybeAssignEpochStartOffset); the log here learns an epoch only from
// its first append, and until then a follower asking about an epoch
// between our last written one and the current one would get "undefined"
// instead of the point where our log stops agreeing with it.
func (p *Partition) endOffsetForEpochLocked(requested int32) (int32, int64) {
	latest := p.log.LatestEpoch()
	if !p.mu.isLeader || latest >= p.mu.leaderEpoch {
		return p.log.EndOffsetForEpoch(requested)
	}
	switch {
	case requested < 0:
		return -1, -1
	case requested == p.mu.leaderEpoch:
		return requested, p.log.LogEndOffset()
	case requested > p.mu.leaderEpoch:
		return -1, -1
	}
	e, off := p.log.EndOffsetForEpoch(requested)
	if e == -1 && off == -1 || requested == latest {
		// requested is at or above every epoch the log holds: the
		// current epoch is the next one, starting at the epoch start.
		if latest < 0 {
			return requested, p.mu.st.EpochStart()
		}
		return latest, p.mu.st.EpochStart()
	}
	return e, off
}

// Manager hosts this broker's partitions: it leads some, follows others
// through one fetcher per leader broker, and keeps each led partition's
// ISR and high watermark.
type Manager struct {
	cfg    Config
	nodeID int32
	logs   *partition.Manager
	meta   cluster.Metadata
	logger zerolog.Logger
	now    func() time.Time
	// penv is what its partitions share (Partition.env).
	penv partitionEnv
	// replicaSets holds the replica and ISR lists partitions keep.
	replicaSets replicaSets

	// ctx ends at Close; it bounds AlterPartition calls and fetches.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts goroutines started through goTracked.
	wg        sync.WaitGroup
	waiterSeq atomic.Uint64

	// reconcileMu serialises applying metadata (at start, from Watch) with
	// Close.
	reconcileMu sync.Mutex
	// reconcileVisits counts the partition records reconcile examined,
	// for tests of its cost.
	reconcileVisits atomic.Int64

	mu     sync.RWMutex
	parts  map[partition.TopicPartition]*Partition
	closed bool

	fetch fetchers
	// waiters keeps released fetch waiters (getWaiter).
	waiters sync.Pool
	// loadSem bounds the producer-state loads running at once.
	loadSem chan struct{}

	tickMu sync.Mutex
	tick   *time.Timer

	// followerThrottle is follower.replication.throttled.rate, spent by
	// the fetchers on throttled partitions, and leaderThrottle
	// leader.replication.throttled.rate, spent serving follower fetches
	// of throttled partitions (throttle.go).
	followerThrottle replicaThrottle
	leaderThrottle   replicaThrottle
}

// NewManager returns a manager over logs, following meta, with Kafka's
// default replication settings. It reconciles with the current image at
// once and with every later one.
func NewManager(logs *partition.Manager, meta cluster.Metadata, logger zerolog.Logger, opts ...Option) (*Manager, error) {
	cfg := DefaultConfig()
	cfg.NodeID = meta.NodeID()
	return NewManagerWithConfig(cfg, logs, meta, logger, opts...)
}

// Option changes how a Manager is built.
type Option func(*Manager)

// WithClock replaces the manager's clock (time.Now), which every
// timestamp, lag and deadline of replication/ reads.
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// NewManagerWithConfig is NewManager with explicit replication settings.
func NewManagerWithConfig(cfg Config, logs *partition.Manager, meta cluster.Metadata, logger zerolog.Logger, opts ...Option) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, nodeID: cfg.NodeID, logs: logs, meta: meta, logger: logger, now: time.Now, parts: make(map[partition.TopicPartition]*Partition),
		loadSem: make(chan struct{}, maxProducerLoads)}
	for _, o := range opts {
		o(m)
	}
	m.penv = partitionEnv{now: m.now, log: &m.logger, expiry: cfg.ProducerIDExpiration, spawn: m.spawnProducerLoad}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.followerThrottle.setRate(-1)
	m.leaderThrottle.setRate(-1)
	m.fetch.init(m)
	// Watch first, then apply the current image, both under reconcileMu:
	// a change applied in between is then seen by the watch callback
	// rather than lost.
	m.reconcileMu.Lock()
	meta.Watch(func(prev, next *cluster.Image) {
		m.reconcileMu.Lock()
		defer m.reconcileMu.Unlock()
		if m.isClosed() {
			return
		}
		if err := m.reconcile(prev, next); err != nil {
			m.logger.Error().Err(err).Msg("applying metadata to replicas failed")
		}
	})
	err := m.reconcile(nil, meta.Image())
	m.reconcileMu.Unlock()
	if err != nil {
		m.Close()
		return nil, err
	}
	m.scheduleTick()
	return m, nil
}

func (m *Manager) isClosed() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.closed
}

// Close stops the fetchers, the ISR checks and pending AlterPartition
// calls, and answers parked acks=all produces with NOT_LEADER_OR_FOLLOWER.
// The logs stay open: they belong to the partition.Manager.
func (m *Manager) Close() {
	m.reconcileMu.Lock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.reconcileMu.Unlock()
		return
	}
	m.closed = true
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.Unlock()
	m.reconcileMu.Unlock()

	m.tickMu.Lock()
	if m.tick != nil {
		m.tick.Stop()
	}
	m.tickMu.Unlock()
	m.cancel()
	m.fetch.stopAll()
	for _, p := range parts {
		p.mu.Lock()
		if p.mu.st != nil {
			p.applyLocked(Effects{Done: p.mu.st.Resign()})
			p.mu.st = nil
		}
		p.mu.isLeader = false
		p.notifyLocked(true, true)
		p.mu.Unlock()
	}
	m.wg.Wait()
	// With fetchers stopped and produces failed, the producer state is
	// final: snapshot it so the next start reads only the log past it.
	// Each snapshot is a file of its own, fsynced: with thousands of
	// partitions one after another they took most of a clean shutdown,
	// so closeSnapshotWriters write them at once.
	work := make(chan *Partition)
	var wg sync.WaitGroup
	for range min(closeSnapshotWriters, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				p.closeSnapshot()
			}
		}()
	}
	for _, p := range parts {
		work <- p
	}
	close(work)
	wg.Wait()
}

// closeSnapshotWriters is how many producer snapshots Close writes at
// once: fsyncs of different files overlap in the filesystem's journal.
const closeSnapshotWriters = 32

// closeSnapshot writes the partition's producer snapshot at Close.
func (p *Partition) closeSnapshot() {
	defer func() {
		if r := recover(); r != nil {
			p.logger().Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("producer state snapshot panicked")
		}
	}()
	if err := p.snapshotProducers(); err != nil {
		p.logger().Warn().Err(err).Msg("producer state snapshot failed")
	}
}

// goTracked runs fn on a goroutine Close waits for, logging a panic
// rather than dying of it; false if closed.
func (m *Manager) goTracked(fn func()) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				m.logger.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("replica manager task failed")
			}
		}()
		fn()
	}()
	return true
}

// spawnProducerLoad runs a background producer-state load, at most
// maxProducerLoads at a time; false if closed. Close cancels the loads'
// context and waits for them.
func (m *Manager) spawnProducerLoad(load func(ctx context.Context)) bool {
	return m.goTracked(func() {
		select {
		case m.loadSem <- struct{}{}:
			defer func() { <-m.loadSem }()
		case <-m.ctx.Done():
		}
		load(m.ctx)
	})
}

// scheduleTick arms the ISR expiry check, every replica.lag.time.max.ms/2
// as in Kafka. A re-armed timer rather than a ticker goroutine: nothing
// runs between checks.
func (m *Manager) scheduleTick() {
	m.tickMu.Lock()
	defer m.tickMu.Unlock()
	if m.isClosed() {
		return
	}
	m.tick = time.AfterFunc(max(m.cfg.ReplicaLagTimeMax/2, time.Millisecond), func() {
		m.checkISRs()
		m.scheduleTick()
	})
}

// checkISRs feeds a tick to every led partition's state machine.
func (m *Manager) checkISRs() {
	m.mu.RLock()
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.RUnlock()
	now := m.now().UnixMilli()
	for _, p := range parts {
		p.mu.Lock()
		st := p.mu.st
		var prop *ISRProposal
		if st != nil {
			prop = p.applyLocked(st.Tick(now))
		}
		p.mu.Unlock()
		m.afterUnlock(p, st, prop)
	}
}

// afterUnlock sends a proposal made by st, if any.
func (m *Manager) afterUnlock(p *Partition, st *leaderState, prop *ISRProposal) {
	if prop == nil {
		return
	}
	p.logger().Info().Ints32("isr", prop.NewISR).
		Int32("leader_epoch", prop.LeaderEpoch).Int32("partition_epoch", prop.PartitionEpoch).Msg("proposing ISR change")
	// After Close nothing is sent; the proposal stays pending, as its
	// outcome would be unknown anyway.
	m.goTracked(func() { m.alterPartition(p, st, *prop) })
}

// alterPartition sends one ISR proposal to the controller and feeds the
// outcome back to st. The controller applies an accepted change to the
// metadata too, and the Watch callback may deliver it before or after this
// returns; the state machine accepts whichever comes first and ignores the
// other.
func (m *Manager) alterPartition(p *Partition, st *leaderState, prop ISRProposal) {
	var epochs []int64
	p.mu.Lock()
	if b := p.mu.busy; b != nil && b.proposalFrom == st && b.proposalSeq == prop.Seq {
		epochs = slices.Clone(b.proposalEpochs)
	}
	p.mu.Unlock()
	if i := slices.Index(prop.NewISR, m.nodeID); i >= 0 && i < len(epochs) {
		if b, ok := m.meta.Image().Brokers[m.nodeID]; ok && b.Epoch > 0 {
			epochs[i] = b.Epoch
		}
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.ReplicaSocketTimeout)
	res, err := m.meta.AlterPartition(ctx, cluster.AlterPartitionRequest{
		BrokerID: m.nodeID, Topic: p.TP.Topic, Partition: p.TP.Partition,
		LeaderEpoch: prop.LeaderEpoch, PartitionEpoch: prop.PartitionEpoch, NewISR: prop.NewISR, NewISREpochs: epochs,
	})
	cancel()
	outcome := alterOutcome(err)
	if err != nil {
		p.logger().Info().Err(err).Msg("ISR change not accepted")
	}
	if outcome == AlterRetry {
		// Do not hammer a controller that is down: the state machine
		// keeps the proposal and asks for it to be sent again.
		t := time.NewTimer(m.cfg.ReplicaFetchBackoff)
		select {
		case <-t.C:
		case <-m.ctx.Done():
			t.Stop()
		}
	}
	p.mu.Lock()
	var next *ISRProposal
	if p.mu.st == st {
		next = p.applyLocked(st.AlterPartitionDone(prop.Seq, outcome, LeaderAndISR{
			LeaderEpoch: res.LeaderEpoch, PartitionEpoch: res.PartitionEpoch, Replicas: res.Replicas, ISR: res.ISR,
		}))
		if outcome == AlterOK {
			p.mu.partitionEpoch = max(p.mu.partitionEpoch, res.PartitionEpoch)
		}
		p.notifyLocked(true, true)
	}
	p.mu.Unlock()
	m.afterUnlock(p, st, next)
}

func alterOutcome(err error) AlterPartitionOutcome {
	switch {
	case err == nil:
		return AlterOK
	case errors.Is(err, cluster.ErrIneligibleReplica), errors.Is(err, kerr.IneligibleReplica),
		errors.Is(err, kerr.OperationNotAttempted):
		// The controller says the change was not applied, and no
		// controller, past or future, will apply it.
		return AlterRejected
	case errors.Is(err, cluster.ErrFencedLeaderEpoch), errors.Is(err, cluster.ErrInvalidUpdateVersion),
		errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrUnknownTopic),
		errors.Is(err, cluster.ErrInvalidRequest),
		errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
		errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.NewLeaderElected):
		// Our state is stale, or the change was applied and we are no
		// longer leader (NEW_LEADER_ELECTED): wait for metadata.
		return AlterWaitForMetadata
	}
	// A timeout, NOT_CONTROLLER, a network error: the change may have been
	// committed.
	return AlterRetry
}

// reconcile makes the hosted partitions match next: logs for partitions
// assigned here, none for deleted topics, configs, roles and epochs
// current. Called with reconcileMu held.
func (m *Manager) reconcile(prev, next *cluster.Image) error {
	bd := m.meta.BrokerDefaults()
	m.followerThrottle.setRate(throttleRate(next, m.nodeID, bd, followerThrottledRate))
	m.leaderThrottle.setRate(throttleRate(next, m.nodeID, bd, leaderThrottledRate))
	var firstErr error
	unchangedBrokers := prev != nil && sameBrokers(prev, next) && sameBrokerConfigs(prev, next)
	m.openNewLogs(prev, next)
	// With the brokers as they were, only topics whose record changed
	// need anything done, and of a topic changed by partition changes
	// alone (ISR, leader, replicas) only the partitions those replaced
	// (TopicInfo.ChangedSince): an ISR change of one partition of a
	// topic with 10,000 costs one partition, not 10,000. want then holds
	// only the changed partitions, and only they can have gone.
	incremental := unchangedBrokers
	want := make(map[partition.TopicPartition]bool)
	visit := func(t *cluster.TopicInfo, i int, was *cluster.TopicInfo, cfg partition.Config, minISR int) {
		pi := &t.Partitions[i]
		m.reconcileVisits.Add(1)
		tp := partition.TopicPartition{Topic: t.Name, Partition: pi.Partition}
		if !slices.Contains(pi.Replicas, m.nodeID) {
			if incremental {
				want[tp] = false
			}
			return
		}
		want[tp] = true
		if was != nil && i < len(was.Partitions) && samePartition(&was.Partitions[i], pi) && m.hosts(tp) {
			return
		}
		if err := m.ensure(tp, pi, cfg, minISR, next); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, t := range next.Topics {
		if unchangedBrokers && prev.Topics[t.Name] == t {
			if !incremental {
				for i := range t.Partitions {
					want[partition.TopicPartition{Topic: t.Name, Partition: int32(i)}] = true
				}
			}
			continue
		}
		cfg := LogConfig(next, t, m.nodeID, bd)
		minISR := cluster.MinInsyncReplicas(next, t, m.nodeID, bd)
		// A change to some of a topic's partitions (an ISR change, an
		// election) leaves the others' records as they were: those need
		// nothing done, and with many partitions doing it anyway made
		// every change cost as much as the whole topic.
		var was *cluster.TopicInfo
		pt := imageTopic(prev, t.Name)
		if unchangedBrokers && pt != nil && pt.ID == t.ID && maps.Equal(pt.Configs, t.Configs) {
			was = pt
		}
		if was != nil {
			if changed, ok := t.ChangedSince(was); ok {
				for _, p := range changed {
					if int(p) < len(t.Partitions) {
						visit(t, int(p), was, cfg, minISR)
					}
				}
				continue
			}
		}
		for i := range t.Partitions {
			visit(t, i, was, cfg, minISR)
		}
		if incremental && pt != nil {
			// Partitions of an earlier topic of this name beyond this
			// one's count.
			for i := len(t.Partitions); i < len(pt.Partitions); i++ {
				want[partition.TopicPartition{Topic: t.Name, Partition: int32(i)}] = false
			}
		}
	}
	m.mu.Lock()
	var gone []*Partition
	if incremental {
		// Partitions of deleted topics, and those of changed topics
		// that no longer list this broker.
		for name, pt := range prev.Topics {
			if next.Topics[name] != nil {
				continue
			}
			for i := range pt.Partitions {
				tp := partition.TopicPartition{Topic: name, Partition: int32(i)}
				if _, ok := want[tp]; !ok {
					want[tp] = false
				}
			}
		}
		for tp, ok := range want {
			if p := m.parts[tp]; !ok && p != nil {
				gone = append(gone, p)
				delete(m.parts, tp)
			}
		}
	} else {
		for tp, p := range m.parts {
			if !want[tp] {
				gone = append(gone, p)
				delete(m.parts, tp)
			}
		}
	}
	m.mu.Unlock()
	if prev == nil {
		// At start-up, logs on disk whose topic is gone (deleted while
		// this broker was down, or just before a crash) are removed.
		for _, tp := range m.logs.Partitions() {
			if !want[tp] {
				m.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("removing log of a partition not assigned here")
				if err := m.logs.Delete(tp); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	for _, p := range gone {
		m.detach(p)
		if err := m.logs.Delete(p.TP); err != nil && firstErr == nil {
			firstErr = err
		}
		p.logger().Info().Msg("partition removed")
	}
	return firstErr
}

// logOpeners bounds how many logs openNewLogs creates at once.
const logOpeners = 16

// openNewLogs opens (creating them on disk) the logs of the partitions
// next gives this broker that it does not host yet, several at a time:
// each new log costs a few fsyncs (its directory, its partition.metadata),
// and a topic with thousands of partitions would otherwise wait for them
// one after another. ensure then finds them open; one that failed here is
// tried again there, which reports the error.
func (m *Manager) openNewLogs(prev, next *cluster.Image) {
	type job struct {
		tp partition.TopicPartition
		id cluster.TopicID
	}
	var jobs []job
	for _, t := range next.Topics {
		if prev != nil && prev.Topics[t.Name] == t {
			continue
		}
		idx := func(yield func(int) bool) {
			for i := range t.Partitions {
				if !yield(i) {
					return
				}
			}
		}
		if pt := imageTopic(prev, t.Name); pt != nil && pt.ID == t.ID {
			if changed, ok := t.ChangedSince(pt); ok {
				idx = func(yield func(int) bool) {
					for _, p := range changed {
						if int(p) < len(t.Partitions) && !yield(int(p)) {
							return
						}
					}
				}
			}
		}
		for i := range idx {
			pi := &t.Partitions[i]
			if !slices.Contains(pi.Replicas, m.nodeID) {
				continue
			}
			tp := partition.TopicPartition{Topic: t.Name, Partition: pi.Partition}
			if m.hosts(tp) || m.offlineLog(tp) {
				continue
			}
			jobs = append(jobs, job{tp, t.ID})
		}
	}
	if len(jobs) < 2 {
		return
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(logOpeners, len(jobs)) {
		wg.Go(func() {
			for j := range work {
				func() {
					defer func() {
						if r := recover(); r != nil {
							m.logger.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("opening a new log panicked")
						}
					}()
					if _, err := m.openLog(j.tp, j.id); err != nil {
						m.logger.Debug().Err(err).Str("topic", j.tp.Topic).Int32("partition", j.tp.Partition).Msg("opening a new log failed; retried in order")
					}
				}()
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

// imageTopic is im's topic name, nil if im is nil or has none.
func imageTopic(im *cluster.Image, name string) *cluster.TopicInfo {
	if im == nil {
		return nil
	}
	return im.Topics[name]
}

// samePartition reports whether two records of a partition say the same.
func samePartition(a, b *cluster.PartitionInfo) bool {
	return a.Partition == b.Partition && a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch &&
		a.PartitionEpoch == b.PartitionEpoch && slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		maps.Equal(a.Directories, b.Directories) && slices.Equal(a.ELR, b.ELR) && slices.Equal(a.LastKnownELR, b.LastKnownELR) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas)
}

// hosts reports whether tp has a replica here.
func (m *Manager) hosts(tp partition.TopicPartition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[tp] != nil
}

// detach ends p's role once it is out of m.parts: its fetcher stops, its
// leadership resigns (parked produces answered, the state machine
// dropped) and everything parked on it wakes.
func (m *Manager) detach(p *Partition) {
	m.fetch.remove(p.TP)
	p.roleMu.Lock()
	p.mu.Lock()
	if p.mu.st != nil {
		p.applyLocked(Effects{Done: p.mu.st.Resign()})
		p.mu.st = nil
	}
	p.mu.isLeader = false
	p.notifyLocked(true, true)
	p.mu.Unlock()
	p.roleMu.Unlock()
}

func sameBrokers(a, b *cluster.Image) bool {
	if len(a.Brokers) != len(b.Brokers) {
		return false
	}
	for id, x := range a.Brokers {
		y, ok := b.Brokers[id]
		if !ok || x.Host != y.Host || x.Port != y.Port || x.Fenced != y.Fenced {
			return false
		}
	}
	return true
}

func sameBrokerConfigs(a, b *cluster.Image) bool {
	if len(a.BrokerConfigs) != len(b.BrokerConfigs) {
		return false
	}
	for k, v := range a.BrokerConfigs {
		w, ok := b.BrokerConfigs[k]
		if !ok || len(v) != len(w) {
			return false
		}
		for kk, vv := range v {
			if w[kk] != vv {
				return false
			}
		}
	}
	return true
}

func (m *Manager) ensure(tp partition.TopicPartition, pi *cluster.PartitionInfo, cfg partition.Config, minISR int, im *cluster.Image) error {
	m.mu.Lock()
	p := m.parts[tp]
	m.mu.Unlock()
	if p == nil && m.offlineLog(tp) {
		return nil // offline until a restart (logdir.go)
	}
	if p == nil {
		lg, err := m.openLog(tp, im.Topics[tp.Topic].ID)
		if err != nil {
			return fmt.Errorf("open log %s: %w", tp, err)
		}
		p = m.newPartition(tp, lg)
		m.mu.Lock()
		m.parts[tp] = p
		m.mu.Unlock()
	}
	p.log.UpdateConfig(cfg)
	tcfg := im.Topics[tp.Topic].Configs
	p.followerThrottled.Store(throttledReplica(tcfg[followerThrottledReplicas], tp.Partition, m.nodeID))
	p.leaderThrottled.Store(throttledReplica(tcfg[leaderThrottledReplicas], tp.Partition, m.nodeID))
	if pi.Leader == m.nodeID {
		m.makeLeader(p, pi, minISR, im)
	} else {
		m.makeFollower(p, pi, im)
	}
	return nil
}

// makeLeader starts or updates leadership from a partition record naming
// this broker leader (Kafka's Partition.makeLeader).
func (m *Manager) makeLeader(p *Partition, pi *cluster.PartitionInfo, minISR int, im *cluster.Image) {
	// Stop following first: this waits for a response being applied, so
	// no follower append can interleave with the first leader append.
	m.fetch.remove(p.TP)
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	if pi.LeaderEpoch < p.mu.leaderEpoch {
		p.mu.Unlock()
		return
	}
	li := LeaderAndISR{
		LeaderEpoch: pi.LeaderEpoch, PartitionEpoch: pi.PartitionEpoch,
		Replicas: pi.Replicas, ISR: pi.ISR, Ineligible: ineligible(im, pi.Replicas), MinISR: minISR,
	}
	now := m.now().UnixMilli()
	st := p.mu.st
	newEpoch := st == nil || pi.LeaderEpoch > p.mu.leaderEpoch
	var eff Effects
	if st == nil {
		st, eff = newLeaderState(m.nodeID, m.cfg.ReplicaLagTimeMax.Milliseconds(), li, p.log.LogEndOffset(), p.log.HighWatermark(), now)
		p.mu.st = st
	} else {
		// The state machine's LEO is the log's before a new epoch starts
		// there (an append that failed part way never reported one).
		eff = st.Appended(p.log.LogEndOffset())
		eff.merge(st.UpdateLeaderAndISR(li, now))
	}
	if newEpoch {
		p.logger().Info().Int32("leader_epoch", pi.LeaderEpoch).
			Int64("epoch_start_offset", st.EpochStart()).Int64("high_watermark", st.HW()).Ints32("isr", st.ISR()).Msg("became leader")
	}
	p.mu.isLeader = true
	p.mu.leader = m.nodeID
	p.mu.leaderEpoch = pi.LeaderEpoch
	p.mu.partitionEpoch = max(p.mu.partitionEpoch, pi.PartitionEpoch)
	p.mu.replicas = m.replicaSets.get(pi.Replicas)
	prop := p.applyLocked(eff)
	p.notifyLocked(true, true)
	p.mu.Unlock()
	m.afterUnlock(p, st, prop)
	if newEpoch {
		// Load the producer state now (in the background) rather than at
		// the first idempotent produce, which would have to wait for it.
		p.startProducerLoad()
	}
}

// makeFollower stops leader duties (parked produces get
// NOT_LEADER_OR_FOLLOWER) and, when the leader or its epoch changed, hands
// the partition to the fetcher of the new leader, which truncates it by
// epoch before fetching (Kafka's Partition.makeFollower and
// ReplicaManager.makeFollowers).
func (m *Manager) makeFollower(p *Partition, pi *cluster.PartitionInfo, im *cluster.Image) {
	p.roleMu.Lock()
	p.mu.Lock()
	if pi.LeaderEpoch < p.mu.leaderEpoch {
		p.mu.Unlock()
		p.roleMu.Unlock()
		return
	}
	if st := p.mu.st; st != nil {
		p.applyLocked(Effects{Done: st.Resign()})
		p.mu.st = nil
		p.logger().Info().Int32("leader_epoch", pi.LeaderEpoch).
			Int32("leader", pi.Leader).Msg("became follower")
	}
	p.mu.isLeader = false
	p.mu.leader = pi.Leader
	p.mu.leaderEpoch = pi.LeaderEpoch
	p.mu.partitionEpoch = pi.PartitionEpoch
	p.mu.replicas = m.replicaSets.get(pi.Replicas)
	p.mu.isr = m.replicaSets.get(pi.ISR)
	p.notifyLocked(true, true)
	p.mu.Unlock()
	p.roleMu.Unlock()

	// Followers keep the producer state too, ready for a failover.
	p.startProducerLoad()
	b, ok := im.Brokers[pi.Leader]
	if pi.Leader < 0 || !ok {
		m.fetch.remove(p.TP)
		return
	}
	m.fetch.assign(p, pi.Leader, pi.LeaderEpoch, fmt.Sprintf("%s:%d", b.Host, b.Port))
}

func ineligible(im *cluster.Image, replicas []int32) []int32 {
	var out []int32
	for _, r := range replicas {
		if b, ok := im.Brokers[r]; !ok || b.Fenced {
			out = append(out, r)
		}
	}
	return out
}

// Get returns a hosted partition or nil.
func (m *Manager) Get(tp partition.TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[tp]
}

// leader returns the partition if this broker leads it.
func (m *Manager) leader(tp partition.TopicPartition, currentEpoch int32) (*Partition, error) {
	p := m.Get(tp)
	if p == nil {
		if m.meta.Image().Partition(tp.Topic, tp.Partition) == nil {
			return nil, ErrUnknownTopicOrPartition
		}
		if m.offlineLog(tp) {
			return nil, storageErr(tp)
		}
		return nil, ErrNotLeaderOrFollower
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		return nil, err
	}
	if !p.mu.isLeader {
		return nil, ErrNotLeaderOrFollower
	}
	return p, nil
}

// Produce appends a produce payload to tp as leader. acks is 0, 1 or -1.
// With -1 it returns once the high watermark has passed the batch (every
// ISR member has it), or fails: NOT_ENOUGH_REPLICAS before appending if the
// ISR is smaller than min.insync.replicas, NOT_ENOUGH_REPLICAS_AFTER_APPEND
// if it shrank below by then, REQUEST_TIMED_OUT after timeout,
// NOT_LEADER_OR_FOLLOWER if leadership moved while waiting.
func (m *Manager) Produce(ctx context.Context, tp partition.TopicPartition, records []byte, acks int16, timeout time.Duration) (partition.AppendInfo, error) {
	return m.ProduceWithOptions(ctx, tp, records, acks, timeout, AppendOptions{})
}

// ProduceWithOptions is Produce with the extra rules of opts.
func (m *Manager) ProduceWithOptions(ctx context.Context, tp partition.TopicPartition, records []byte, acks int16, timeout time.Duration, opts AppendOptions) (partition.AppendInfo, error) {
	info, wait, err := m.AppendWithOptions(ctx, tp, records, acks, timeout, opts)
	if err != nil || wait == nil {
		return info, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	return info, wait(ctx, timer.C)
}

// ProduceWait waits for an acks=all append to be replicated: it returns
// once the high watermark has passed it (nil, or the error a shrunk ISR
// or a lost leadership gives), when deadline fires (REQUEST_TIMED_OUT) or
// when ctx is done. deadline may be shared by many waits (a closed
// channel).
type ProduceWait func(ctx context.Context, deadline <-chan time.Time) error

// AppendWithOptions is the append half of ProduceWithOptions: it appends
// and, for acks=-1, returns the wait for replication instead of waiting,
// so that a request spanning many partitions appends them all and then
// waits once (Kafka's single DelayedProduce per request). An idempotent
// batch arriving while the partition's producer state loads waits for it,
// holding no lock, at most timeout.
func (m *Manager) AppendWithOptions(ctx context.Context, tp partition.TopicPartition, records []byte, acks int16, timeout time.Duration, opts AppendOptions) (partition.AppendInfo, ProduceWait, error) {
	p, err := m.leader(tp, -1)
	if err != nil {
		return partition.AppendInfo{}, nil, err
	}
	hdrs, err := partition.ValidateBatches(records, p.log.Config().MaxMessageBytes)
	if err != nil {
		return partition.AppendInfo{}, nil, err
	}
	// Kafka's rules for produce v3+: one batch per partition, and control
	// batches only from the transaction coordinator, never from clients.
	if len(hdrs) != 1 {
		return partition.AppendInfo{}, nil, fmt.Errorf("%w: produce requests must contain exactly one record batch, got %d", partition.ErrInvalidRecord, len(hdrs))
	}
	if !opts.FromCoordinator {
		if hdrs[0].IsControl() {
			return partition.AppendInfo{}, nil, fmt.Errorf("%w: clients may not write control batches", partition.ErrInvalidRecord)
		}
		if err := partition.CheckClientBatch(hdrs[0]); err != nil {
			return partition.AppendInfo{}, nil, err
		}
	}

	// An idempotent batch waits (holding no lock) for the producer state
	// to load, at most the produce's timeout.
	start := m.now()
	var (
		st   *leaderState
		info partition.AppendInfo
		dup  bool
	)
	for {
		p.roleMu.RLock()
		p.mu.Lock()
		st = p.mu.st
		if st == nil {
			p.mu.Unlock()
			p.roleMu.RUnlock()
			return partition.AppendInfo{}, nil, ErrNotLeaderOrFollower
		}
		epoch, canAppend := p.mu.leaderEpoch, st.CanAppend(acks)
		p.mu.Unlock()
		if canAppend != nil {
			p.roleMu.RUnlock()
			return partition.AppendInfo{}, nil, canAppend
		}
		var ld *producerLoad
		info, dup, ld, err = p.appendAsLeader(records, hdrs[0], epoch, opts)
		if ld == nil {
			break
		}
		p.roleMu.RUnlock()
		if err := waitProducers(ctx, ld, timeout-m.now().Sub(start)); err != nil {
			return partition.AppendInfo{}, nil, err
		}
	}
	if err != nil {
		p.roleMu.RUnlock()
		return info, nil, err
	}
	var id uint64
	var done chan error
	p.mu.Lock()
	var eff Effects
	if !dup {
		eff = st.Appended(p.log.LogEndOffset())
	}
	if acks == -1 {
		id = m.waiterSeq.Add(1)
		done = make(chan error, 1)
		b := p.busyLocked()
		if b.waiters == nil {
			b.waiters = make(map[uint64]chan error)
		}
		b.waiters[id] = done
		eff.merge(st.AddWaiter(id, info.LastOffset+1))
	}
	prop := p.applyLocked(eff)
	p.notifyLocked(true, false)
	p.mu.Unlock()
	p.roleMu.RUnlock()
	m.afterUnlock(p, st, prop)
	if acks != -1 {
		return info, nil, nil
	}
	return info, func(ctx context.Context, deadline <-chan time.Time) error {
		return m.waitReplicated(ctx, deadline, p, id, done)
	}, nil
}

func (m *Manager) waitReplicated(ctx context.Context, deadline <-chan time.Time, p *Partition, id uint64, done chan error) error {
	parkedAt := m.now()
	defer func() { addParked(ctx, m.now().Sub(parkedAt)) }()
	var waitErr error
	select {
	case err := <-done:
		return err
	case <-deadline:
		waitErr = ErrRequestTimedOut
	case <-ctx.Done():
		waitErr = fmt.Errorf("%w: %w", ErrRequestTimedOut, ctx.Err())
	}
	p.mu.Lock()
	var parked bool
	if b := p.mu.busy; b != nil {
		_, parked = b.waiters[id]
	}
	if parked {
		delete(p.mu.busy.waiters, id)
		if p.mu.st != nil {
			p.mu.st.RemoveWaiter(id)
		}
	}
	p.mu.Unlock()
	if !parked {
		// Completed between the timer and the lock.
		return <-done
	}
	return waitErr
}

// FetchPartition is one partition of a fetch.
type FetchPartition struct {
	TP                 partition.TopicPartition
	Offset             int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the last batch the fetcher holds
	// (Fetch v12+); it is checked against this leader's epoch cache only
	// when HasLastFetchedEpoch, and a mismatch answers DivergingEpoch
	// instead of records (KIP-320, truncation on fetch).
	LastFetchedEpoch    int32
	HasLastFetchedEpoch bool
	// LogStartOffset is a follower's log start offset.
	LogStartOffset int64
}

// FetchParams is a whole fetch.
type FetchParams struct {
	MinBytes      int32
	MaxBytes      int32
	MaxWait       time.Duration
	ReadCommitted bool
	Partitions    []FetchPartition
	// FromFollower marks a follower's fetch (replica id >= 0): it reads up
	// to the LEO rather than the HW, is recorded in the ISR state, and
	// parks until the LEO moves.
	FromFollower bool
	ReplicaID    int32
	// ReplicaEpoch is the follower's broker epoch (Fetch v15+
	// ReplicaState), -1 if it sent none.
	ReplicaEpoch int64
	// ClientMetadata marks a consumer's fetch that carries client
	// metadata (Fetch v11+): a follower may serve it, and a leader may
	// point it at a PreferredReadReplica in ClientRack (client.rack, ""
	// for none); see preferred.go.
	ClientMetadata bool
	ClientRack     string
	// ZeroCopy lets results carry file Regions instead of Records, for a
	// connection that can send them with sendfile.
	ZeroCopy bool
	// OnPark, if set, is called before the fetch parks to wait for data.
	OnPark func()
	// Session, for a follower's fetch in a fetch session, is the
	// session's standing watch: the fetch registers the partitions it
	// reads with it, parks on it, and records the session's fetch time
	// for the partitions it leaves out (session.go). Partitions names
	// only those the session's fetch must read.
	Session *SessionWatch
	// More, with Session, is called after each wait: it returns the
	// session's partitions changed meanwhile that the fetch has not read
	// yet, which it reads as well (their results follow the others'), and
	// whether any partition changed at all.
	More func() (extra []FetchPartition, changed bool)
}

// FetchResult is one partition's answer.
type FetchResult struct {
	Err              error
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          []byte
	// Region, only with FetchParams.ZeroCopy, holds the batches instead
	// of Records; whoever ends up with the result must close it.
	Region *partition.Region
	// DivergingEpoch and DivergingEndOffset, set when HasDivergingEpoch,
	// tell the fetcher where its log stops agreeing with this leader's.
	DivergingEpoch     int32
	DivergingEndOffset int64
	HasDivergingEpoch  bool
	// AbortedTransactions (read_committed only) are the aborted
	// transactions overlapping the records returned.
	AbortedTransactions []idempotent.TxnRange
	// PreferredReadReplica, set when HasPreferredReadReplica, is the
	// replica the consumer should fetch from instead (KIP-392); the
	// result then carries no records.
	PreferredReadReplica    int32
	HasPreferredReadReplica bool
	// Settled, in a session's fetch, means the follower needs nothing
	// more of the partition until it changes: no error, nothing past its
	// fetch offset, and the follower in the ISR. A session's next fetch
	// may then leave it out.
	Settled bool
}

// Fetch reads the partitions as a consumer or, with FromFollower, for a
// follower. When fewer than MinBytes are available it parks until a high
// watermark (a LEO, for followers) among them moves, MaxWait passes or ctx
// ends, then reads again.
func (m *Manager) Fetch(ctx context.Context, fp FetchParams) []FetchResult {
	if fp.Session != nil {
		return m.sessionFetch(ctx, fp)
	}
	var w *fetchWaiter
	defer func() {
		if w != nil {
			w.release()
		}
	}()
	first := true
	timing := false
	for {
		// Watch the partitions before reading them so that a change
		// between the read and the wait is not missed. One waiter
		// serves them all: a parked fetch costs no goroutine per
		// partition.
		if fp.MaxWait > 0 {
			if w == nil {
				w = m.getWaiter()
				w.replica = fp.FromFollower
			}
			w.changed.Store(false)
			m.watchAll(w, fp.Partitions)
		}
		recordFrom := len(fp.Partitions)
		if first {
			recordFrom = 0
		}
		res, total, respondNow := m.readAll(ctx, fp, recordFrom)
		first = false
		if total >= int64(fp.MinBytes) || respondNow || fp.MaxWait <= 0 || len(w.watched) == 0 {
			return res
		}
		CloseRegions(res) // read again after the wait
		if !timing {
			timing = true
			w.startTimer(fp.MaxWait)
		}
		if fp.OnPark != nil {
			fp.OnPark()
		}
		parkedAt := m.now()
		woke := false
		select {
		case <-w.ch:
			woke = true
		case <-w.timer.C:
		case <-ctx.Done():
		}
		addParked(ctx, m.now().Sub(parkedAt))
		if !woke {
			if total == 0 && !w.changed.Load() {
				// Nothing read and nothing changed since: the read
				// stands. (An idle follower's fetch over thousands of
				// partitions would otherwise read them all twice.)
				return res
			}
			res, _, _ = m.readAll(ctx, fp, len(fp.Partitions))
			return res
		}
		// The partitions may have been replaced (a role change): watch
		// them afresh.
		w.unwatchAll()
	}
}

// sessionFetch is Fetch for a follower's fetch session: the partitions
// stay registered with the session's watch between fetches, and the fetch
// parks on the watch even when it reads no partition at all (an idle
// session's fetch names none and nothing changed). After a wait it reads
// the partitions that changed meanwhile too (fp.More).
func (m *Manager) sessionFetch(ctx context.Context, fp FetchParams) []FetchResult {
	w := fp.Session
	w.roundMs.Store(m.now().UnixMilli())
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	recordFrom := 0
	for {
		// readAll registers each partition it reads with the watch.
		res, total, respondNow := m.readAll(ctx, fp, recordFrom)
		if total >= int64(fp.MinBytes) || respondNow || fp.MaxWait <= 0 {
			return res
		}
		CloseRegions(res) // read again after the wait
		if timer == nil {
			timer = time.NewTimer(fp.MaxWait)
		}
		if fp.OnPark != nil {
			fp.OnPark()
		}
		parkedAt := m.now()
		woke := false
		select {
		case <-w.ch:
			woke = true
		case <-timer.C:
		case <-ctx.Done():
		}
		addParked(ctx, m.now().Sub(parkedAt))
		changed := false
		var extra []FetchPartition
		if fp.More != nil {
			extra, changed = fp.More()
		}
		recordFrom = len(fp.Partitions)
		fp.Partitions = append(fp.Partitions, extra...)
		if !woke {
			if total == 0 && !changed {
				// Nothing read and nothing changed since: the read
				// stands.
				return res
			}
			res, _, _ = m.readAll(ctx, fp, recordFrom)
			return res
		}
	}
}

// fetchWaiter is one parked Fetch. Each partition it reads holds it while
// it waits and signals it (notifyLocked): on a high watermark move for a
// consumer, on an append for a follower, on a role or log start change for
// both.
type fetchWaiter struct {
	ch      chan struct{} // buffered (1)
	replica bool
	watched []*Partition
	// changed is set by any change to a watched partition, including
	// those that do not wake it (a follower's on a high watermark move).
	changed atomic.Bool
	// timer ends the wait at the fetch's MaxWait; kept, stopped, with
	// the waiter.
	timer *time.Timer
	// pool is where release puts the waiter back (Manager.getWaiter).
	pool *sync.Pool
}

// getWaiter returns a released waiter, with its channel and timer, or a
// new one: a follower parks a fetch for every batch it replicates, and
// each would otherwise allocate them again. The pool is the manager's,
// not the process's, so that a waiter never outlives the manager (a test
// bubble's timers and channels stay in their bubble).
func (m *Manager) getWaiter() *fetchWaiter {
	if w, ok := m.waiters.Get().(*fetchWaiter); ok {
		return w
	}
	return &fetchWaiter{ch: make(chan struct{}, 1), pool: &m.waiters}
}

// startTimer starts the wait's deadline d from now.
func (w *fetchWaiter) startTimer(d time.Duration) {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
		return
	}
	// A stopped timer (see release) delivers nothing stale: since Go
	// 1.23 Stop and Reset discard a pending expiry.
	w.timer.Reset(d)
}

// release deregisters w and stops its timer; no partition holds it any
// more, so nothing signals it after this, and it goes back to the pool.
func (w *fetchWaiter) release() {
	w.unwatchAll()
	if w.timer != nil {
		w.timer.Stop()
	}
	clear(w.watched[:cap(w.watched)])
	w.pool.Put(w)
}

func (w *fetchWaiter) signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// watchAll registers w with the hosted partitions among parts.
func (m *Manager) watchAll(w *fetchWaiter, parts []FetchPartition) {
	for _, part := range parts {
		if p := m.Get(part.TP); p != nil {
			p.watch(w)
			w.watched = append(w.watched, p)
		}
	}
}

// unwatchAll deregisters w and drops any signal it holds.
func (w *fetchWaiter) unwatchAll() {
	for _, p := range w.watched {
		p.unwatch(w)
	}
	w.watched = w.watched[:0]
	select {
	case <-w.ch:
	default:
	}
}

// CloseRegions closes the file regions of results that will not be sent.
func CloseRegions(res []FetchResult) {
	for i := range res {
		if res[i].Region != nil {
			res[i].Region.Close()
			res[i].Region = nil
		}
	}
}

// readAll reads every partition once. A follower's position in the
// partitions from index recordFrom on goes to the ISR state machine: those
// the fetch reads for the first time (as in Kafka, re-reads after a
// long-poll wait do not record again).
// respondNow is set when an error or a diverging epoch must be answered
// without waiting.
//
// A read_committed read waits at most the fetch's MaxWait for the
// producer state to load, then answers ErrProducerStateLoading.
func (m *Manager) readAll(ctx context.Context, fp FetchParams, recordFrom int) ([]FetchResult, int64, bool) {
	res := make([]FetchResult, len(fp.Partitions))
	var total int64
	respondNow := false
	budget := int64(fp.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	minOne := true
	var rounds *atomic.Int64
	if fp.Session != nil {
		rounds = &fp.Session.roundMs
	}
	for i, part := range fp.Partitions {
		record := i >= recordFrom
		r := &res[i]
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
		r.DivergingEpoch, r.DivergingEndOffset = -1, -1
		p, err := m.readable(part.TP, part.CurrentLeaderEpoch, !fp.ClientMetadata || fp.FromFollower)
		if err == nil && fp.FromFollower {
			err = p.checkReplica(fp.ReplicaID, part.CurrentLeaderEpoch)
		}
		if err != nil {
			r.Err = err
			respondNow = true
			continue
		}
		if fp.Session != nil {
			// The partition read, registered before its LEO is taken:
			// an append after that marks it dirty. Registering the
			// fetch's partitions before reading any would miss one
			// this broker creates (or replaces) in between, which the
			// read then finds settled and nothing watches.
			fp.Session.watch(part.TP, p)
		}
		if fp.ClientMetadata && !fp.FromFollower {
			if id := m.preferredReadReplica(p, fp.ClientRack, part.Offset); id >= 0 {
				// Kafka skips the read and answers where to read instead,
				// with this leader's offsets, at once.
				hw := p.log.HighWatermark()
				r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, min(p.lastStableIfLoaded(), hw), p.log.LogStartOffset()
				r.PreferredReadReplica, r.HasPreferredReadReplica = id, true
				respondNow = true
				continue
			}
		}
		// The LEO before the read: appends racing with it must not keep a
		// follower that read everything from counting as caught up.
		leo := p.log.LogEndOffset()
		hw := p.log.HighWatermark()
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, hw, p.log.LogStartOffset()
		if part.HasLastFetchedEpoch && part.LastFetchedEpoch >= 0 {
			e, end, diverged, err := p.checkDivergence(part)
			if err != nil {
				r.Err = err
				respondNow = true
				continue
			}
			if diverged {
				r.DivergingEpoch, r.DivergingEndOffset, r.HasDivergingEpoch = e, end, true
				respondNow = true
				continue
			}
		}
		limit := int64(part.MaxBytes)
		if limit > budget {
			limit = budget
		}
		// Over leader.replication.throttled.rate a catching-up replica of
		// a throttled partition gets no records (throttle.go).
		leaderThrottled := fp.FromFollower && p.leaderThrottledFor(fp.ReplicaID)
		throttledOut := leaderThrottled && m.leaderThrottle.wait(m.now()) > 0
		if (limit <= 0 && !minOne) || throttledOut {
			// Nothing more fits in the response (or may be sent), but the
			// follower's position is news all the same (Kafka reads such
			// a partition with zero bytes and records it like any other).
			if fp.FromFollower && record {
				r.Settled = m.followerFetched(p, fp.ReplicaID, fp.ReplicaEpoch, part.Offset, part.LogStartOffset, leo, rounds) && part.Offset >= leo
				hw := p.log.HighWatermark()
				r.HighWatermark, r.LastStableOffset = hw, hw
			}
			continue
		}
		maxOffset := hw
		lso := hw
		if fp.FromFollower {
			maxOffset = 1<<63 - 1
		} else if fp.ReadCommitted {
			if lso, err = p.lastStable(ctx, fp.MaxWait); err != nil {
				r.Err = err
				respondNow = true
				continue
			}
			maxOffset = lso
			r.LastStableOffset = lso
		}
		read := p.log.Read
		if fp.ZeroCopy {
			read = p.log.ReadRegion
		}
		ri, err := read(part.Offset, int32(max(limit, 0)), maxOffset, minOne)
		if err != nil {
			r.Err = err
			respondNow = true
			continue
		}
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = ri.HighWatermark, ri.HighWatermark, ri.LogStartOffset
		r.Records, r.Region = ri.Records, ri.Region
		if !fp.FromFollower && !fp.ReadCommitted {
			r.LastStableOffset = min(p.lastStableIfLoaded(), ri.HighWatermark)
		}
		if fp.ReadCommitted {
			r.LastStableOffset = lso
			if end := ri.NextOffset; end > part.Offset {
				if r.AbortedTransactions, err = p.abortedIn(ctx, fp.MaxWait, part.Offset, end); err != nil {
					CloseRegions(res[i : i+1])
					r.Err, r.Records = err, nil
					respondNow = true
					continue
				}
			}
		}
		if n := ri.Size(); n > 0 {
			total += n
			budget -= n
			minOne = false
			if leaderThrottled {
				m.leaderThrottle.record(m.now(), int(n))
			}
		}
		if fp.FromFollower && record {
			r.Settled = m.followerFetched(p, fp.ReplicaID, fp.ReplicaEpoch, part.Offset, part.LogStartOffset, leo, rounds) && part.Offset >= leo
			// The HW may have moved with this fetch; answer it.
			hw := p.log.HighWatermark()
			r.HighWatermark, r.LastStableOffset = hw, hw
		}
	}
	return res, total, respondNow
}

// checkReplica refuses a follower fetch from a broker outside the replica
// set as Kafka's Partition.followerReplicaOrThrow does: UNKNOWN_LEADER_EPOCH
// when the request names an epoch (the replica set may be ahead of our
// metadata), NOT_LEADER_OR_FOLLOWER otherwise.
func (p *Partition) checkReplica(id, currentEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.mu.leader && slices.Contains(p.mu.replicas, id) {
		return nil
	}
	if currentEpoch >= 0 {
		return ErrUnknownLeaderEpoch
	}
	return ErrNotLeaderOrFollower
}

// checkDivergence is Kafka's Partition.readRecords check of a fetch's last
// fetched epoch: if this leader's log ends that epoch before the fetch
// offset, or holds no later epoch than an older one, the fetcher's log has
// diverged and it is told the largest common epoch and where it ends.
func (p *Partition) checkDivergence(part FetchPartition) (epoch int32, end int64, diverged bool, err error) {
	p.mu.Lock()
	e, off := p.endOffsetForEpochLocked(part.LastFetchedEpoch)
	p.mu.Unlock()
	if e < 0 || off < 0 {
		return -1, -1, false, fmt.Errorf("%w: could not determine the end offset of the last fetched epoch %d", partition.ErrOffsetOutOfRange, part.LastFetchedEpoch)
	}
	if part.Offset < p.log.LogStartOffset() {
		return -1, -1, false, fmt.Errorf("%w: offset %d below the log start", partition.ErrOffsetOutOfRange, part.Offset)
	}
	if e < part.LastFetchedEpoch || off < part.Offset {
		return e, off, true, nil
	}
	return -1, -1, false, nil
}

// followerFetched records a follower's position, and the broker epoch its fetch
// carried, with the ISR state machine. With rounds (the fetch is a
// session's, see session.go) it reports whether the follower is settled
// (leaderState.FollowerInSession).
func (m *Manager) followerFetched(p *Partition, id int32, brokerEpoch, offset, logStart, leaderLEO int64, rounds *atomic.Int64) bool {
	now := m.now().UnixMilli()
	p.mu.Lock()
	// The broker epoch first: a proposal this fetch triggers names it.
	p.noteReplicaEpochLocked(id, brokerEpoch)
	st := p.mu.st
	var prop *ISRProposal
	settled := false
	if st != nil {
		prop = p.applyLocked(st.FollowerFetched(id, offset, logStart, leaderLEO, now))
		if rounds != nil {
			settled = st.FollowerInSession(id, rounds)
		}
	}
	p.mu.Unlock()
	m.afterUnlock(p, st, prop)
	return settled && prop == nil
}

// ListOffset answers ListOffsets for one partition: ts -1 latest, -2
// earliest, -3 max timestamp, otherwise the first offset with a timestamp
// at or after ts. Latest is the high watermark (or the last stable offset
// for read_committed), as consumers cannot read past it.
//
// KIP-207 (Kafka's Partition.fetchOffsetForTimestamp): a leader whose HW
// has not yet reached the offset where its epoch started may be behind
// the HW the previous leader reported, so "latest" — and a lookup that
// finds nothing below the HW — answers OFFSET_NOT_AVAILABLE (retriable)
// until it has, rather than an offset that moves backwards.
func (m *Manager) ListOffset(tp partition.TopicPartition, ts int64, currentEpoch int32, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, err error) {
	p, err := m.leader(tp, currentEpoch)
	if err != nil {
		return -1, -1, -1, err
	}
	lg := p.log
	p.mu.Lock()
	if p.mu.st == nil {
		// The leadership moved since m.leader looked.
		p.mu.Unlock()
		return -1, -1, -1, ErrNotLeaderOrFollower
	}
	epoch, epochStart := p.mu.leaderEpoch, p.mu.st.EpochStart()
	p.mu.Unlock()
	if ts == -2 {
		return lg.LogStartOffset(), -1, lg.EpochForOffset(lg.LogStartOffset()), nil
	}
	limit := lg.HighWatermark()
	lagging := epochStart > limit
	if ts == -1 && lagging {
		return -1, -1, -1, ErrOffsetNotAvailable
	}
	if readCommitted {
		// No waiting here: a loading producer state is answered with a
		// retriable error at once.
		if limit, err = p.lastStable(context.Background(), 0); err != nil {
			return -1, -1, -1, err
		}
	}
	if ts == -1 {
		return limit, -1, epoch, nil
	}
	off, t, e, ok, err := lg.OffsetForTimestamp(ts)
	if err != nil {
		return -1, -1, -1, err
	}
	if !ok || off >= limit {
		if lagging {
			return -1, -1, -1, ErrOffsetNotAvailable
		}
		return -1, -1, -1, nil
	}
	return off, t, e, nil
}

// DeleteRecords advances the log start offset of tp to offset (-1: the
// high watermark) and returns the new low watermark. Followers follow the
// leader's log start offset from fetch responses.
func (m *Manager) DeleteRecords(tp partition.TopicPartition, offset int64) (int64, error) {
	p, err := m.leader(tp, -1)
	if err != nil {
		return -1, err
	}
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, partition.ErrOffsetOutOfRange
	}
	low, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	p.mu.Lock()
	p.notifyLocked(true, true)
	p.mu.Unlock()
	return low, nil
}

// OffsetForLeaderEpoch answers with the end offset of leaderEpoch on this
// leader (KIP-101/279 for followers, KIP-320 for consumers).
func (m *Manager) OffsetForLeaderEpoch(tp partition.TopicPartition, currentEpoch, leaderEpoch int32) (int32, int64, error) {
	p, err := m.leader(tp, currentEpoch)
	if err != nil {
		return -1, -1, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, off := p.endOffsetForEpochLocked(leaderEpoch)
	return e, off, nil
}

// partitionLogger is a partition's child of the manager's logger.
func partitionLogger(l zerolog.Logger, tp partition.TopicPartition) zerolog.Logger {
	return l.With().Str("topic", tp.Topic).Int32("partition", tp.Partition).Logger()
}

// logger returns a logger with the partition's topic and partition
// fields.
func (p *Partition) logger() *zerolog.Logger {
	if p.env == nil || p.env.log == nil {
		l := zerolog.Nop()
		return &l
	}
	l := partitionLogger(*p.env.log, p.TP)
	return &l
}

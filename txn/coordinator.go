package txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// Replicas is what the coordinator needs of the replica manager.
type Replicas interface {
	coordinator.Replicas
	// AppendControl writes a transaction marker to tp as its leader and
	// waits for the ISR.
	AppendControl(ctx context.Context, tp TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool, timeout time.Duration) error
}

// ReplicaStore adapts a replication.Manager to Replicas.
func ReplicaStore(m *replication.Manager) Replicas {
	return replicaStore{coordinator.ReplicaStore(m), m}
}

type replicaStore struct {
	coordinator.Replicas
	m *replication.Manager
}

func (s replicaStore) AppendControl(ctx context.Context, tp TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool, timeout time.Duration) error {
	return s.m.AppendControl(ctx, tp, pid, epoch, coordinatorEpoch, commit, timeout)
}

// Metadata is what the coordinator needs of the cluster metadata.
type Metadata interface {
	coordinator.Metadata
	// PeerClientID names this node to the brokers it sends markers to.
	PeerClientID(role string) string
}

// Groups is told about markers written to __consumer_offsets partitions,
// which decide transactional offset commits; group.Coordinator provides it.
type Groups interface {
	CompleteTxn(tp partition.TopicPartition, pid int64, commit bool)
}

// Coordinator is this broker's transaction coordinator.
type Coordinator struct {
	cfg      Config
	meta     Metadata
	replicas Replicas
	groups   Groups
	newPID   func(ctx context.Context) (int64, error)
	logger   zerolog.Logger
	now      func() time.Time

	// own follows the __transaction_state partitions this broker leads;
	// mu guards its state.
	own *coordinator.Owner[*ownedPartition]
	mu  struct {
		sync.Mutex
		txns map[string]*entry
	}
	clients struct {
		sync.Mutex
		m map[string]*protocol.Client
	}
	wg   sync.WaitGroup
	stop chan struct{}
}

// ownedPartition is a __transaction_state partition this broker leads.
type ownedPartition struct {
	coordinator.Partition
}

// entry holds one transactional id's state and the lock that guards it.
type entry struct {
	mu   sync.Mutex
	m    meta
	part *ownedPartition
	// pending is set while a write of this id's state is in flight;
	// requests meanwhile answer CONCURRENT_TRANSACTIONS.
	pending bool
}

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithClock replaces the wall clock.
func WithClock(now func() time.Time) Option { return func(c *Coordinator) { c.now = now } }

// New returns a coordinator following meta. newPID hands out producer ids
// (the same blocks idempotent producers draw from); groups may be nil.
func New(cfg Config, meta Metadata, replicas Replicas, groups Groups, newPID func(context.Context) (int64, error), logger zerolog.Logger, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, meta: meta, replicas: replicas, groups: groups, newPID: newPID, logger: logger, now: time.Now, stop: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	c.own = coordinator.NewOwner(StateTopic, meta.NodeID(), &c.mu.Mutex, &c.wg, coordinator.Hooks[*ownedPartition]{
		New:    func(p coordinator.Partition) *ownedPartition { return &ownedPartition{Partition: p} },
		Load:   c.load,
		Unload: c.unload,
	})
	c.mu.txns = make(map[string]*entry)
	c.clients.m = make(map[string]*protocol.Client)
	c.own.Reconcile(meta.Image())
	meta.Watch(func(_, next *cluster.Image) { c.own.Reconcile(next) })
	c.wg.Add(1)
	go c.timeoutLoop()
	return c, nil
}

// Close stops the coordinator: loads, marker writers and the timeout sweep
// stop; transactions left half done are finished by the next coordinator.
func (c *Coordinator) Close() {
	if !c.own.Close(func() { close(c.stop) }) {
		return
	}
	c.wg.Wait()
	c.clients.Lock()
	for _, cl := range c.clients.m {
		cl.Close()
	}
	c.clients.m = map[string]*protocol.Client{}
	c.clients.Unlock()
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// unload forgets a partition's transactions; writes in flight for them
// fail with NOT_COORDINATOR.
func (c *Coordinator) unload(pid int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	op, ok := c.own.DetachLocked(pid)
	if !ok {
		return
	}
	n := 0
	for id, e := range c.mu.txns {
		if e.part == op {
			delete(c.mu.txns, id)
			n++
		}
	}
	if n > 0 || op.Loaded {
		c.logger.Info().Int32("partition", pid).Int("transactions", n).Msg("unloaded transactions of a state partition no longer led here")
	}
}

// owns reports whether op is still the loaded owner of its partition.
func (c *Coordinator) owns(op *ownedPartition) bool { return c.own.Owns(op) }

// load reads a partition from its start up to the log end as it was when
// leadership began (each read bounded by the high watermark, as group/
// does), installs the transactions, and resumes those left prepared.
func (c *Coordinator) load(op *ownedPartition) {
	defer c.wg.Done()
	tp := TopicPartition{Topic: StateTopic, Partition: op.ID}
	log := c.logger.With().Int32("partition", op.ID).Int32("epoch", op.Epoch).Logger()
	start := c.now()
	txns := map[string]meta{}
	apply := func(r coordinator.LogRecord) error {
		if r.Bad != nil {
			log.Warn().Err(r.Bad).Int64("offset", r.Offset).Msg("skipping the rest of a malformed batch in the transaction state partition")
			return nil
		}
		if r.Control {
			return nil
		}
		offset, value := r.Offset, r.Value
		id, ok, err := decodeKey(r.Key)
		if err != nil {
			log.Warn().Err(err).Int64("offset", offset).Msg("skipping undecodable record")
			return nil
		}
		if !ok {
			return nil
		}
		if value == nil {
			delete(txns, id)
			return nil
		}
		m, err := decodeValue(id, value)
		if err != nil {
			log.Warn().Err(err).Int64("offset", offset).Msg("skipping undecodable transaction state")
			return nil
		}
		txns[id] = m
		return nil
	}
	pos, ok := coordinator.LoadPartition(c.replicas, tp, c.cfg.LoadBufferSize, op.Cancel, log, apply)
	if !ok {
		return
	}

	var resume []*entry
	c.mu.Lock()
	if !c.own.CurrentLocked(op) {
		c.mu.Unlock()
		return
	}
	for id, m := range txns {
		e := &entry{m: m, part: op}
		c.mu.txns[id] = e
		if m.state == StatePrepareCommit || m.state == StatePrepareAbort {
			resume = append(resume, e)
		}
	}
	op.Loaded = true
	c.mu.Unlock()
	for _, e := range resume {
		e.mu.Lock()
		m := e.m
		e.mu.Unlock()
		log.Info().Str("transactional_id", m.id).Str("state", m.state.String()).Msg("resuming a transaction left prepared")
		c.goComplete(e, m)
	}
	ev := log.Debug()
	if len(txns) > 0 {
		ev = log.Info()
	}
	ev.Int("transactions", len(txns)).Int64("end_offset", pos).Dur("took", c.now().Sub(start)).Msg("loaded transaction state partition")
}

// owner returns the loaded partition owning id, or the error to answer.
func (c *Coordinator) ownerLocked(id string) (*ownedPartition, error) {
	return c.own.ForKeyLocked(id)
}

// lookup returns the entry of id (nil if unknown) after the ownership
// checks.
func (c *Coordinator) lookup(id string) (*entry, *ownedPartition, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	op, err := c.ownerLocked(id)
	if err != nil {
		return nil, nil, err
	}
	return c.mu.txns[id], op, nil
}

// write appends next as id's state and, once replicated, installs it.
// The entry must be marked pending by the caller (under its lock); write
// clears the mark. It returns the error to answer.
func (c *Coordinator) write(ctx context.Context, e *entry, next meta) error {
	tp := TopicPartition{Topic: StateTopic, Partition: e.part.ID}
	batch := buildBatch(encodeKey(next.id), encodeValue(next), c.nowMs())
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout+time.Second)
	err := c.replicas.Append(wctx, tp, batch, c.cfg.WriteTimeout)
	cancel()
	err = convertAppendError(err)
	if err == nil && !c.owns(e.part) {
		// Leadership moved while writing: the new coordinator has the
		// record (or will not), and decides from here.
		err = ErrNotCoordinator
	}
	e.mu.Lock()
	e.pending = false
	if err == nil {
		e.m = next
	}
	e.mu.Unlock()
	if err != nil {
		c.logger.Warn().Err(err).Str("transactional_id", next.id).Str("state", next.state.String()).Msg("writing transaction state failed")
	}
	return err
}

// convertAppendError maps a failed append to what Kafka answers
// (TransactionStateManager.appendTransactionToLog).
func convertAppendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replication.ErrUnknownTopicOrPartition), errors.Is(err, replication.ErrNotEnoughReplicas),
		errors.Is(err, replication.ErrNotEnoughReplicasAfterAppend), errors.Is(err, replication.ErrRequestTimedOut),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	case errors.Is(err, replication.ErrNotLeaderOrFollower), errors.Is(err, replication.ErrStorage),
		errors.Is(err, partition.ErrLogClosed):
		return fmt.Errorf("%w: %v", ErrNotCoordinator, err)
	}
	return fmt.Errorf("%w: %v", ErrUnknownServer, err)
}

// InitResult is InitProducerId's answer.
type InitResult struct {
	ProducerID int64
	Epoch      int16
}

// InitProducerID serves InitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (InitResult, error) {
	fail := InitResult{ProducerID: -1, Epoch: -1}
	if timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds() {
		return fail, fmt.Errorf("%w: %d ms is not within (0, %d]", ErrInvalidTxnTimeout, timeoutMs, c.cfg.MaxTimeout.Milliseconds())
	}
	e, op, err := c.lookup(id)
	if err != nil {
		return fail, err
	}
	if e == nil {
		pid, err := c.newPID(ctx)
		if err != nil {
			return fail, fmt.Errorf("%w: allocating a producer id: %v", ErrCoordinatorNotAvailable, err)
		}
		c.mu.Lock()
		if !c.own.CurrentLocked(op) {
			c.mu.Unlock()
			return fail, ErrNotCoordinator
		}
		if e = c.mu.txns[id]; e == nil {
			e = &entry{part: op, m: meta{
				id: id, producerID: pid, lastProducerID: -1, epoch: noEpoch, lastEpoch: noEpoch,
				timeoutMs: timeoutMs, state: StateEmpty, partitions: map[TopicPartition]bool{}, startMs: -1, updateMs: c.nowMs(),
			}}
			c.mu.txns[id] = e
		}
		c.mu.Unlock()
	}
	e.mu.Lock()
	if e.pending {
		e.mu.Unlock()
		return fail, ErrConcurrentTransactions
	}
	next, outcome, err := e.m.prepareInit(c.nowMs(), timeoutMs, expectedPID, expectedEpoch, func() (int64, error) { return c.newPID(ctx) })
	if err != nil {
		e.mu.Unlock()
		return fail, err
	}
	if outcome == initRetry {
		e.mu.Unlock()
		return InitResult{ProducerID: next.producerID, Epoch: next.epoch}, nil
	}
	e.pending = true
	e.mu.Unlock()
	if err := c.write(ctx, e, next); err != nil {
		return fail, err
	}
	if outcome == initAbort {
		c.logger.Info().Str("transactional_id", id).Int64("producer_id", next.producerID).Int16("epoch", next.epoch).Msg("aborting the open transaction of a previous producer")
		c.goComplete(e, next)
		return fail, ErrConcurrentTransactions
	}
	return InitResult{ProducerID: next.producerID, Epoch: next.epoch}, nil
}

// AddPartitions adds partitions to the producer's transaction; it returns
// once the change is replicated.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []TopicPartition) error {
	e, _, err := c.lookup(id)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, id)
	}
	e.mu.Lock()
	if e.pending {
		e.mu.Unlock()
		return ErrConcurrentTransactions
	}
	next, changed, err := e.m.prepareAddPartitions(c.nowMs(), pid, epoch, tps)
	if err != nil || !changed {
		e.mu.Unlock()
		return err
	}
	e.pending = true
	e.mu.Unlock()
	return c.write(ctx, e, next)
}

// VerifyPartition answers whether tp is in the producer's ongoing
// transaction (KIP-890), for a transactional id this broker coordinates.
func (c *Coordinator) VerifyPartition(id string, pid int64, epoch int16, tp TopicPartition) error {
	e, _, err := c.lookup(id)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending && e.m.state != StateOngoing {
		return ErrConcurrentTransactions
	}
	return e.m.verifyPartition(pid, epoch, tp)
}

// EndTxn commits or aborts the producer's transaction. It answers once the
// decision (PrepareCommit/PrepareAbort) is replicated; the markers and the
// final state follow in the background.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	e, _, err := c.lookup(id)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, id)
	}
	e.mu.Lock()
	if e.pending {
		e.mu.Unlock()
		return ErrConcurrentTransactions
	}
	next, outcome, err := e.m.prepareEnd(c.nowMs(), pid, epoch, commit)
	if err != nil || outcome == endDone {
		e.mu.Unlock()
		return err
	}
	e.pending = true
	e.mu.Unlock()
	if err := c.write(ctx, e, next); err != nil {
		return err
	}
	c.goComplete(e, next)
	return nil
}

// timeoutLoop aborts expired transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (c *Coordinator) timeoutLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.AbortTimedOutInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.AbortTimedOut()
		}
	}
}

// AbortTimedOut aborts every loaded transaction open longer than its
// timeout and returns how many it started aborting.
func (c *Coordinator) AbortTimedOut() int {
	c.mu.Lock()
	var entries []*entry
	for _, e := range c.mu.txns {
		if e.part.Loaded {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	n := 0
	now := c.nowMs()
	for _, e := range entries {
		e.mu.Lock()
		if e.pending {
			e.mu.Unlock()
			continue
		}
		next, ok := e.m.prepareTimeoutAbort(now)
		if !ok {
			e.mu.Unlock()
			continue
		}
		e.pending = true
		e.mu.Unlock()
		n++
		c.logger.Info().Str("transactional_id", next.id).Int64("producer_id", next.producerID).Int16("epoch", next.epoch).
			Int32("timeout_ms", next.timeoutMs).Msg("aborting a transaction past its timeout")
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := c.write(context.Background(), e, next); err == nil {
				c.goComplete(e, next)
			}
		}()
	}
	return n
}

// Coordinator answers FindCoordinator for a transactional id: the leader
// of its __transaction_state partition. The topic is created on the first
// call with min(transaction.state.log.replication.factor, live brokers)
// replicas and min.insync.replicas capped at that.
func (c *Coordinator) Coordinator(ctx context.Context, id string) (cluster.BrokerInfo, error) {
	if id == "" {
		return cluster.BrokerInfo{}, fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	return coordinator.CoordinatorFor(ctx, c.meta, coordinator.InternalTopic{
		Name: StateTopic, NumPartitions: c.cfg.NumPartitions,
		ReplicationFactor: c.cfg.ReplicationFactor, MinISR: c.cfg.MinISR,
		Configs: map[string]string{
			"cleanup.policy": "compact", "compression.type": "uncompressed",
			"unclean.leader.election.enable": "false",
			"segment.bytes":                  strconv.FormatInt(c.cfg.SegmentBytes, 10),
		},
	}, id, c.logger)
}

// Description is a transaction as DescribeTransactions reports it.
type Description struct {
	State         State
	ProducerID    int64
	Epoch         int16
	TimeoutMs     int32
	StartMs       int64
	Partitions    []TopicPartition
	TransactionID string
}

// Describe describes a transactional id this broker coordinates.
func (c *Coordinator) Describe(id string) (Description, error) {
	e, _, err := c.lookup(id)
	if err != nil {
		return Description{}, err
	}
	if e == nil {
		return Description{}, ErrTransactionalIDNotFound
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.m
	return Description{State: m.state, ProducerID: m.producerID, Epoch: m.epoch, TimeoutMs: m.timeoutMs, StartMs: m.startMs, Partitions: m.sortedPartitions(), TransactionID: id}, nil
}

// Listing is one transaction as ListTransactions reports it.
type Listing struct {
	TransactionID string
	ProducerID    int64
	State         State
	// StartMs is when the ongoing transaction began, -1 if none.
	StartMs int64
}

// List lists the transactions of the loaded partitions, filtered by state
// and producer id when those are non-empty. The error is
// COORDINATOR_LOAD_IN_PROGRESS while a partition is loading.
func (c *Coordinator) List(states []State, pids []int64) ([]Listing, error) {
	c.mu.Lock()
	if c.own.ClosedLocked() {
		c.mu.Unlock()
		return nil, ErrCoordinatorNotAvailable
	}
	var err error
	if c.own.LoadingLocked() {
		err = ErrCoordinatorLoading
	}
	entries := make([]*entry, 0, len(c.mu.txns))
	for _, e := range c.mu.txns {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	wantState := map[State]bool{}
	for _, s := range states {
		wantState[s] = true
	}
	wantPID := map[int64]bool{}
	for _, p := range pids {
		wantPID[p] = true
	}
	var out []Listing
	for _, e := range entries {
		e.mu.Lock()
		l := Listing{TransactionID: e.m.id, ProducerID: e.m.producerID, State: e.m.state, StartMs: e.m.startMs}
		if l.State != StateOngoing {
			l.StartMs = -1
		}
		e.mu.Unlock()
		if len(wantState) > 0 && !wantState[l.State] || len(wantPID) > 0 && !wantPID[l.ProducerID] {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionID < out[j].TransactionID })
	return out, err
}

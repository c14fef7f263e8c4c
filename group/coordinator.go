package group

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/coordinator"
)

// Coordinator is this broker's group coordinator: it serves the groups
// whose __consumer_offsets partition this broker leads.
type Coordinator struct {
	cfg      Config
	meta     Metadata
	replicas Replicas
	logger   zerolog.Logger
	now      func() time.Time
	deps     *groupDeps
	cdeps    *consumerDeps

	// viewMu guards the topics view of the last metadata image seen.
	viewMu    sync.Mutex
	viewImage *cluster.Image
	view      *TopicsView

	// own follows the __consumer_offsets partitions this broker leads;
	// mu guards its state.
	own *coordinator.Owner[*ownedPartition]
	mu  struct {
		sync.Mutex
		groups map[string]*groupEntry
	}
	wg   sync.WaitGroup
	stop chan struct{}
}

// ownedPartition is a __consumer_offsets partition this broker leads.
type ownedPartition struct {
	coordinator.Partition
	app *appender
	// share holds the share groups' records as last loaded or queued, by
	// group then key; shareUnsure the keys whose write failed. Both are
	// guarded by Coordinator.mu (records_share.go).
	share       map[string]map[string][]byte
	shareUnsure map[string]map[string]bool
}

// groupEntry holds one group and the lock that guards it. Lock order:
// Coordinator.mu before groupEntry.mu before appender.mu; nothing takes
// Coordinator.mu while holding a group's lock.
type groupEntry struct {
	mu sync.Mutex
	g  *classicGroup
	// cg is set while the group is a consumer-protocol group (KIP-848);
	// g then stays Empty and holds only the committed offsets.
	cg *consumerGroup
	// cgWritten is the consumer group's records as last queued for the
	// log, by key; cgUnsure the keys whose write failed, rewritten (or
	// tombstoned) with the next change. See persistConsumerLocked.
	cgWritten map[string][]byte
	cgUnsure  map[string]bool
	deps      *groupDeps
	part      *ownedPartition
	timer     *time.Timer
	// timerAt is the deadline the timer is set for, noDeadline if none.
	timerAt int64
}

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithClock replaces the wall clock.
func WithClock(now func() time.Time) Option { return func(c *Coordinator) { c.now = now } }

// New returns a coordinator following meta: it takes over the groups of
// every __consumer_offsets partition this broker leads, now and after
// every metadata change. Close stops it.
func New(cfg Config, meta Metadata, replicas Replicas, logger zerolog.Logger, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, meta: meta, replicas: replicas, logger: logger, now: time.Now, stop: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	c.own = coordinator.NewOwner(OffsetsTopic, meta.NodeID(), &c.mu.Mutex, &c.wg, coordinator.Hooks[*ownedPartition]{
		New:    func(p coordinator.Partition) *ownedPartition { return &ownedPartition{Partition: p} },
		Load:   c.load,
		Unload: c.unload,
	})
	c.mu.groups = make(map[string]*groupEntry)
	c.deps = &groupDeps{
		initialRebalanceDelayMs: cfg.InitialRebalanceDelay.Milliseconds(),
		maxSize:                 cfg.MaxSize,
		newMemberID:             newMemberID,
	}
	c.cdeps = &consumerDeps{
		sessionTimeoutMs:    cfg.ConsumerSessionTimeout.Milliseconds(),
		heartbeatIntervalMs: int32(cfg.ConsumerHeartbeatInterval.Milliseconds()),
		maxSize:             cfg.ConsumerMaxSize,
		newMemberID:         func() string { return newMemberID("consumer") },
	}
	c.own.Reconcile(meta.Image())
	meta.Watch(func(_, next *cluster.Image) { c.own.Reconcile(next) })
	c.wg.Add(1)
	go c.expireLoop()
	return c, nil
}

// newMemberID is Kafka's: the client id (or group.instance.id) and a UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Close stops the coordinator: loads and timers stop, parked requests are
// answered NOT_COORDINATOR, and queued writes fail.
func (c *Coordinator) Close() {
	if c.own.Close(func() { close(c.stop) }) {
		c.wg.Wait()
	}
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// unload gives up a partition: its groups become Dead, parked requests are
// answered NOT_COORDINATOR, queued writes fail.
func (c *Coordinator) unload(pid int32) {
	c.mu.Lock()
	op, ok := c.own.DetachLocked(pid)
	if !ok {
		c.mu.Unlock()
		return
	}
	app := op.app
	var entries []*groupEntry
	for id, e := range c.mu.groups {
		if e.part == op {
			entries = append(entries, e)
			delete(c.mu.groups, id)
		}
	}
	c.mu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		e.g.unload(ErrNotCoordinator)
		if e.cg != nil {
			e.cg.unload()
		}
		c.rescheduleLocked(e)
		e.mu.Unlock()
	}
	if app != nil {
		app.close()
	}
	if len(entries) > 0 || op.Loaded {
		c.logger.Info().Int32("partition", pid).Int("groups", len(entries)).Msg("unloaded groups of an offsets partition no longer led here")
	}
}

// load reads a partition from its start and installs its groups. It reads
// up to the log end as it was when leadership began, each read bounded by
// the high watermark: everything the new leader holds becomes committed
// under its leadership (its followers truncate to it), and reading only
// below the HW keeps the coordinator from acting on records that could
// still be lost if this broker itself lost leadership meanwhile.
//
// Its steps: replay the log (offsetsReplay), start the partition's
// appender, build the groups' entries, install them, then arm their
// timers. It stops, installing nothing, whenever op stops being the
// partition's current ownership.
func (c *Coordinator) load(op *ownedPartition) {
	defer c.wg.Done()
	tp := TopicPartition{Topic: OffsetsTopic, Partition: op.ID}
	log := c.logger.With().Int32("partition", op.ID).Int32("epoch", op.Epoch).Logger()
	start := c.now()

	st := newOffsetsReplay(log)
	pos, ok := coordinator.LoadPartition(c.replicas, tp, c.cfg.OffsetsLoadBufferSize, op.Cancel, log, st.apply)
	if !ok {
		return
	}
	if !c.startAppender(op, tp) {
		return
	}
	entries := c.loadedEntries(op, st)
	if !c.installLoaded(op, entries, st.share) {
		return
	}
	for _, e := range entries {
		e.mu.Lock()
		c.rescheduleLocked(e)
		e.mu.Unlock()
	}
	ev := log.Debug()
	if len(entries) > 0 {
		ev = log.Info()
	}
	ev.Int("groups", len(entries)).Int64("end_offset", pos).Dur("took", c.now().Sub(start)).Msg("loaded groups of offsets partition")
}

// offsetsReplay is the state of an offsets partition rebuilt from its log,
// record by record: the last committed offsets and the last metadata of
// each group, and transactional commits awaiting their marker. A
// tombstone deletes what its key names; a record that cannot be decoded
// is logged and skipped, never fatal to the load.
type offsetsReplay struct {
	log     zerolog.Logger
	offsets map[string]map[TopicPartition]OffsetAndMetadata
	groups  map[string]*groupValue
	// consumer and share hold the records of consumer-protocol and
	// share groups: by group, the last value of each key.
	consumer map[string]map[string][]byte
	share    map[string]map[string][]byte
	// txnOffsets are transactional commits by producer, then group,
	// awaiting their marker.
	txnOffsets map[int64]map[string]map[TopicPartition]OffsetAndMetadata
}

func newOffsetsReplay(log zerolog.Logger) *offsetsReplay {
	return &offsetsReplay{
		log:        log,
		offsets:    map[string]map[TopicPartition]OffsetAndMetadata{},
		groups:     map[string]*groupValue{},
		consumer:   map[string]map[string][]byte{},
		share:      map[string]map[string][]byte{},
		txnOffsets: map[int64]map[string]map[TopicPartition]OffsetAndMetadata{},
	}
}

// apply replays one record of the log (coordinator.LoadPartition's
// callback). It never fails.
func (st *offsetsReplay) apply(r coordinator.LogRecord) error {
	if r.Bad != nil {
		st.log.Warn().Err(r.Bad).Int64("offset", r.Offset).Msg("skipping the rest of a malformed batch in the offsets partition")
		return nil
	}
	if r.Control {
		st.applyMarker(r)
		return nil
	}
	k, ok, err := decodeKey(r.Key)
	if err != nil {
		st.log.Warn().Err(err).Int64("offset", r.Offset).Msg("skipping undecodable record")
		return nil
	}
	if !ok {
		return nil
	}
	if k.isOffset {
		st.applyOffset(k, r)
		return nil
	}
	if k.consumer {
		applyKeyed(st.consumer, k.group, r)
		return nil
	}
	if k.share {
		applyKeyed(st.share, k.group, r)
		return nil
	}
	st.applyGroup(k, r)
	return nil
}

// applyMarker decides the producer's pending transactional commits: a
// commit marker makes them the groups' committed offsets, an abort drops
// them.
func (st *offsetsReplay) applyMarker(r coordinator.LogRecord) {
	if r.Commit {
		for g, m := range st.txnOffsets[r.ProducerID] {
			if st.offsets[g] == nil {
				st.offsets[g] = map[TopicPartition]OffsetAndMetadata{}
			}
			for tp, o := range m {
				st.offsets[g][tp] = o
			}
		}
	}
	delete(st.txnOffsets, r.ProducerID)
}

// applyOffset replays an offset commit: a tombstone deletes the committed
// offset (and the group's offsets once empty); a commit inside a
// transaction waits for its marker; any other becomes committed at once.
func (st *offsetsReplay) applyOffset(k decodedKey, r coordinator.LogRecord) {
	if r.Value == nil {
		if m := st.offsets[k.group]; m != nil {
			delete(m, k.tp)
			if len(m) == 0 {
				delete(st.offsets, k.group)
			}
		}
		return
	}
	o, err := decodeOffsetValue(r.Value)
	if err != nil {
		st.log.Warn().Err(err).Int64("offset", r.Offset).Msg("skipping undecodable offset commit")
		return
	}
	if r.ProducerID >= 0 {
		byGroup := st.txnOffsets[r.ProducerID]
		if byGroup == nil {
			byGroup = map[string]map[TopicPartition]OffsetAndMetadata{}
			st.txnOffsets[r.ProducerID] = byGroup
		}
		if byGroup[k.group] == nil {
			byGroup[k.group] = map[TopicPartition]OffsetAndMetadata{}
		}
		byGroup[k.group][k.tp] = o
		return
	}
	if st.offsets[k.group] == nil {
		st.offsets[k.group] = map[TopicPartition]OffsetAndMetadata{}
	}
	st.offsets[k.group][k.tp] = o
}

// applyGroup replays a group's metadata: the last record wins, a
// tombstone deletes the group.
func (st *offsetsReplay) applyGroup(k decodedKey, r coordinator.LogRecord) {
	if r.Value == nil {
		delete(st.groups, k.group)
		return
	}
	v, err := decodeGroupValue(r.Value)
	if err != nil {
		st.log.Warn().Err(err).Int64("offset", r.Offset).Msg("skipping undecodable group metadata")
		return
	}
	st.groups[k.group] = v
}

// applyKeyed replays a consumer or share group's record into byGroup:
// the last value of each key wins, a tombstone deletes the key.
func applyKeyed(byGroup map[string]map[string][]byte, group string, r coordinator.LogRecord) {
	recs := byGroup[group]
	if r.Value == nil {
		delete(recs, string(r.Key))
		if len(recs) == 0 {
			delete(byGroup, group)
		}
		return
	}
	if recs == nil {
		recs = map[string][]byte{}
		byGroup[group] = recs
	}
	recs[string(r.Key)] = append([]byte(nil), r.Value...)
}

// startAppender gives op its appender, unless op is no longer the
// partition's current ownership (then it reports false). The appender
// exists before any group does: a loaded group may write at once (an
// over-capacity group rebalances on load).
func (c *Coordinator) startAppender(op *ownedPartition, tp TopicPartition) bool {
	c.mu.Lock()
	if !c.own.CurrentLocked(op) {
		c.mu.Unlock()
		return false
	}
	op.app = newAppender(c, tp)
	c.mu.Unlock()
	return true
}

// loadedEntries builds an entry for every group the replay found: those
// with metadata, then those with only committed offsets, then those with
// only offsets pending in a transaction. Transactions still open at the
// end of the log keep their offsets pending; the transaction
// coordinator's markers decide them. The entries are not yet visible to
// requests.
func (c *Coordinator) loadedEntries(op *ownedPartition, st *offsetsReplay) map[string]*groupEntry {
	now := c.nowMs()
	entries := map[string]*groupEntry{}
	for id, v := range st.groups {
		e := c.newEntry(op)
		e.mu.Lock()
		e.g = loadedGroup(id, e.deps, v, now)
		e.mu.Unlock()
		entries[id] = e
	}
	view := c.topicsView()
	for id, recs := range st.consumer {
		e := entries[id]
		if e == nil {
			e = c.newEntry(op)
			entries[id] = e
		}
		e.cgWritten = recs
		cg, ok, err := loadConsumerGroup(id, c.cdeps, recs, view, now)
		if err != nil {
			c.logger.Warn().Err(err).Str("group", id).Msg("skipping the membership of a consumer group whose records cannot be read")
		}
		if e.g == nil || ok && e.g.isClassicInUse() {
			e.g = loadedGroup(id, e.deps, nil, now)
		}
		if ok {
			e.cg = cg
		}
	}
	// A group known only by its offsets is an empty classic group.
	entry := func(id string) *groupEntry {
		e := entries[id]
		if e == nil {
			e = c.newEntry(op)
			e.g = loadedGroup(id, e.deps, nil, now)
			entries[id] = e
		}
		return e
	}
	for id, m := range st.offsets {
		entry(id).g.offsets = m
	}
	for pid, byGroup := range st.txnOffsets {
		for id, m := range byGroup {
			entry(id).g.txnOffsets[pid] = m
		}
	}
	return entries
}

// installLoaded makes the entries the coordinator's groups and marks op
// loaded, under one hold of c.mu, unless op is no longer current: then it
// closes op's appender and reports false.
func (c *Coordinator) installLoaded(op *ownedPartition, entries map[string]*groupEntry, share map[string]map[string][]byte) bool {
	c.mu.Lock()
	if !c.own.CurrentLocked(op) {
		c.mu.Unlock()
		op.app.close()
		return false
	}
	for id, e := range entries {
		c.mu.groups[id] = e
	}
	op.share, op.shareUnsure = share, map[string]map[string]bool{}
	op.Loaded = true
	c.mu.Unlock()
	return true
}

// newEntry returns an entry for a group of op, its store hook bound to it.
func (c *Coordinator) newEntry(op *ownedPartition) *groupEntry {
	e := &groupEntry{part: op, timerAt: noDeadline}
	d := *c.deps
	d.store = func(_ *classicGroup, v *groupValue, done func(error, int64)) { c.storeGroup(e, v, done) }
	e.deps = &d
	return e
}

// storeGroup is the state machine's persistence hook; it runs with the
// group's lock held and only queues the write.
func (c *Coordinator) storeGroup(e *groupEntry, v *groupValue, done func(error, int64)) {
	recs := []record{{key: groupKey(e.g.id), value: encodeGroupValue(v)}}
	e.part.app.enqueue(recs, func(err error) {
		err = convertAppendError(err, false)
		e.mu.Lock()
		defer e.mu.Unlock()
		done(err, c.nowMs())
		c.rescheduleLocked(e)
	})
}

// rescheduleLocked points the group's timer at its next deadline.
func (c *Coordinator) rescheduleLocked(e *groupEntry) {
	next := e.g.nextDeadline()
	if e.cg != nil {
		if n := e.cg.nextDeadline(); n != noDeadline && (next == noDeadline || n < next) {
			next = n
		}
	}
	if next == e.timerAt {
		return
	}
	e.timerAt = next
	if next == noDeadline {
		if e.timer != nil {
			e.timer.Stop()
		}
		return
	}
	d := time.Duration(next-c.nowMs()) * time.Millisecond
	if e.timer == nil {
		e.timer = time.AfterFunc(d, func() { c.fire(e) })
		return
	}
	e.timer.Reset(d)
}

func (c *Coordinator) fire(e *groupEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timerAt = noDeadline
	e.g.tick(c.nowMs())
	if e.cg != nil {
		c.expireConsumerLocked(e)
	}
	c.rescheduleLocked(e)
}

// validateGroup is Kafka's validateGroupStatus: the group id is valid for
// the API, this coordinator is running, owns the group's partition and has
// loaded it. allowEmpty admits the empty group id, which the offset APIs
// and DescribeGroups/DeleteGroups accept for backward compatibility.
func (c *Coordinator) validateGroup(groupID string, allowEmpty bool) (*ownedPartition, error) {
	if groupID == "" && !allowEmpty {
		return nil, ErrInvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.validateGroupLocked(groupID)
}

func (c *Coordinator) validateGroupLocked(groupID string) (*ownedPartition, error) {
	return c.own.ForKeyLocked(groupID)
}

// entry returns the group's entry, creating an empty group when create is
// set, or nil.
func (c *Coordinator) entry(groupID string, create bool) (*groupEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	op, err := c.validateGroupLocked(groupID)
	if err != nil {
		return nil, err
	}
	e := c.mu.groups[groupID]
	if e == nil && create {
		e = c.newEntry(op)
		e.g = newClassicGroup(groupID, e.deps, c.nowMs())
		c.mu.groups[groupID] = e
	}
	return e, nil
}

// JoinGroup serves a JoinGroup; it waits (until ctx ends) while the
// request is parked in a rebalance.
func (c *Coordinator) JoinGroup(ctx context.Context, groupID string, p JoinParams) JoinResult {
	if _, err := c.validateGroup(groupID, false); err != nil {
		return joinError(p.MemberID, err)
	}
	st := time.Duration(p.SessionTimeoutMs) * time.Millisecond
	if st < c.cfg.MinSessionTimeout || st > c.cfg.MaxSessionTimeout {
		return joinError(p.MemberID, ErrInvalidSessionTimeout)
	}
	e, err := c.entry(groupID, p.MemberID == "")
	if err != nil {
		return joinError(p.MemberID, err)
	}
	if e == nil {
		return joinError(p.MemberID, ErrUnknownMemberID)
	}
	ch := make(chan JoinResult, 1)
	e.mu.Lock()
	if e.cg != nil && !e.cg.isEmpty() && e.g.state != StateDead {
		// A classic member of a consumer group (online migration).
		return c.joinConsumerGroupUnlock(e, p)
	}
	if !e.toClassicLocked() {
		e.mu.Unlock()
		return joinError(p.MemberID, ErrInconsistentProtocol)
	}
	// Tombstones for a consumer group this one was until now.
	c.persistConsumerLocked(e)
	e.g.joinGroup(c.nowMs(), p, func(r JoinResult) { ch <- r })
	c.rescheduleLocked(e)
	e.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return joinError(p.MemberID, ErrRebalanceInProgress)
	}
}

// SyncParams is a SyncGroup request.
type SyncParams struct {
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string
	ProtocolName *string
	// Assignments is the leader's assignment by member id.
	Assignments map[string][]byte
}

// SyncGroup serves a SyncGroup; followers wait for the leader's
// assignment to be stored.
func (c *Coordinator) SyncGroup(ctx context.Context, groupID string, p SyncParams) SyncResult {
	if _, err := c.validateGroup(groupID, false); err != nil {
		if errors.Is(err, ErrCoordinatorLoading) {
			// The rebalance's state is lost with the old coordinator;
			// REBALANCE_IN_PROGRESS sends the member back to JoinGroup
			// (older clients do not know COORDINATOR_LOAD_IN_PROGRESS here).
			err = ErrRebalanceInProgress
		}
		return SyncResult{Err: err}
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return SyncResult{Err: err}
	}
	if e == nil {
		return SyncResult{Err: ErrUnknownMemberID}
	}
	ch := make(chan SyncResult, 1)
	e.mu.Lock()
	if e.cg != nil && e.g.state != StateDead {
		r := e.cg.classicSync(c.nowMs(), c.topicsView(), p)
		c.rescheduleLocked(e)
		e.mu.Unlock()
		return r
	}
	e.g.syncGroup(c.nowMs(), p.MemberID, p.InstanceID, p.Generation, p.ProtocolType, p.ProtocolName, p.Assignments, func(r SyncResult) { ch <- r })
	c.rescheduleLocked(e)
	e.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return SyncResult{Err: ErrRebalanceInProgress}
	}
}

// Heartbeat serves a Heartbeat.
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) error {
	if _, err := c.validateGroup(groupID, false); err != nil {
		if errors.Is(err, ErrCoordinatorLoading) {
			// Kafka answers blindly while loading: the member keeps its
			// session until the group is back.
			return nil
		}
		return err
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return err
	}
	if e == nil {
		return ErrUnknownMemberID
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cg != nil && e.g.state != StateDead {
		err = e.cg.classicHeartbeat(c.nowMs(), memberID, instanceID, generation)
		c.rescheduleLocked(e)
		return err
	}
	err = e.g.heartbeat(c.nowMs(), memberID, instanceID, generation)
	c.rescheduleLocked(e)
	return err
}

// LeaveGroup removes members; it returns a group-level error or one error
// per member.
func (c *Coordinator) LeaveGroup(groupID string, members []LeaveMember) (error, []error) {
	if _, err := c.validateGroup(groupID, false); err != nil {
		return err, nil
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return err, nil
	}
	if e == nil {
		errs := make([]error, len(members))
		for i := range errs {
			errs[i] = ErrUnknownMemberID
		}
		return nil, errs
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.g.state == StateDead {
		return ErrCoordinatorNotAvailable, nil
	}
	if e.cg != nil {
		errs := e.cg.classicLeave(members)
		c.persistConsumerLocked(e)
		c.rescheduleLocked(e)
		return nil, errs
	}
	errs := e.g.leaveGroup(c.nowMs(), members)
	c.rescheduleLocked(e)
	return nil, errs
}

// Coordinator answers FindCoordinator for a group: the leader of the
// group's __consumer_offsets partition. The topic is created on the first
// call, with min(offsets.topic.replication.factor, live brokers) replicas.
func (c *Coordinator) Coordinator(ctx context.Context, groupID string) (cluster.BrokerInfo, error) {
	return coordinator.CoordinatorFor(ctx, c.meta, coordinator.InternalTopic{
		Name: OffsetsTopic, NumPartitions: c.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: c.cfg.OffsetsTopicReplicationFactor,
		Configs: map[string]string{
			"cleanup.policy": "compact", "compression.type": "producer",
			"segment.bytes": strconv.FormatInt(c.cfg.OffsetsTopicSegmentBytes, 10),
		},
	}, groupID, c.logger)
}

// PartitionFor returns the __consumer_offsets partition of a group given
// the topic's partition count.
func PartitionFor(groupID string, numPartitions int32) int32 {
	return coordinator.PartitionFor(groupID, numPartitions)
}

package share

// The partition side of share groups: on each partition leader, the
// share-partition states of the groups consuming it, the share sessions
// of the members fetching from this broker, ShareFetch's acquisition and
// long-poll, acknowledgements, lock expiry and start-offset checkpoints.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	groupcfg "github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Replicas is what the manager needs of the replica manager.
type Replicas interface {
	// Leader returns the leader epoch of tp if this broker leads it.
	Leader(tp partition.TopicPartition) (epoch int32, ok bool)
	Fetch(ctx context.Context, fp replication.FetchParams) []replication.FetchResult
	ListOffset(tp partition.TopicPartition, ts int64, currentEpoch int32, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, err error)
	HWMoved(tp partition.TopicPartition) <-chan struct{}
}

// ReplicaSource adapts the replica manager to Replicas.
func ReplicaSource(m *replication.Manager) Replicas { return replicaSource{m} }

type replicaSource struct{ *replication.Manager }

func (r replicaSource) Leader(tp partition.TopicPartition) (int32, bool) {
	p := r.Get(tp)
	if p == nil || !p.IsLeader() {
		return -1, false
	}
	return p.LeaderEpoch(), true
}

// StateWriter writes share offsets through the metadata quorum; the
// cluster controller implements it.
type StateWriter interface {
	UpdateShareState(ctx context.Context, ch cluster.ShareChange) error
}

// Metadata is what the manager needs of the metadata: reading it and
// writing share offsets through it.
type Metadata interface {
	cluster.Metadata
	StateWriter
}

// TP names a partition as share requests do: by topic id.
type TP struct {
	ID        cluster.TopicID
	Partition int32
}

type stateKey struct {
	group, topic string
	partition    int32
}

type sessionKey struct{ group, member string }

// session is a share session (KIP-932's ShareSession): the partitions a
// member fetches from this broker and the epoch its next request carries.
type session struct {
	epoch int32
	parts map[TP]struct{}
}

// Manager holds this broker's share partitions and share sessions.
type Manager struct {
	cfg    Config
	meta   cluster.Metadata
	reps   Replicas
	writer StateWriter // nil: no checkpoints
	logger zerolog.Logger
	now    func() time.Time
	// bg is the context of the sweeper's checkpoints; Close cancels it,
	// so that a checkpoint waiting on the controller does not hold up
	// shutdown.
	bg       context.Context
	cancelBg context.CancelFunc

	mu struct {
		sync.Mutex
		parts    map[stateKey]*Partition
		sessions map[sessionKey]*session
		// avail is closed and replaced when records become available
		// again (released, lock expired), waking parked fetches.
		avail chan struct{}
	}
	sweeper *loop
}

// ManagerOption configures a Manager.
type ManagerOption func(*Manager)

// WithClock replaces the manager's clock (tests).
func WithClock(now func() time.Time) ManagerOption { return func(m *Manager) { m.now = now } }

// NewManager starts the manager and its sweeper (lock expiry, dropping
// partitions no longer led here, checkpoints).
func NewManager(cfg Config, meta Metadata, reps Replicas, logger zerolog.Logger, opts ...ManagerOption) *Manager {
	m := &Manager{cfg: cfg, meta: meta, reps: reps, logger: logger, now: time.Now, writer: meta}
	for _, o := range opts {
		o(m)
	}
	m.mu.parts = map[stateKey]*Partition{}
	m.mu.sessions = map[sessionKey]*session{}
	m.mu.avail = make(chan struct{})
	m.bg, m.cancelBg = context.WithCancel(context.Background())
	lastCheckpoint := m.now()
	// The sweep has work only while some share partition is held here
	// (its locks, its checkpoint); shareLocked wakes it for the first.
	m.sweeper = startLoop(sweepInterval, func() {
		m.expire()
		if m.now().Sub(lastCheckpoint) >= m.cfg.CheckpointInterval {
			lastCheckpoint = m.now()
			m.checkpoint()
		}
	}, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.mu.parts) == 0
	})
	return m
}

// Close stops the sweeper, cancelling a checkpoint under way.
func (m *Manager) Close() {
	m.cancelBg()
	m.sweeper.Close()
}

func (m *Manager) nowMs() int64 { return m.now().UnixMilli() }

// groupConfig returns a group config: the group's override or the
// broker's value.
func groupConfig(im *cluster.Image, group, name string) (string, bool) {
	v, ok := im.GroupConfigs[group][name]
	return v, ok
}

func (m *Manager) limits(im *cluster.Image, group string) Limits {
	lim := Limits{
		LockMs:        m.cfg.RecordLockDuration.Milliseconds(),
		DeliveryLimit: int16(m.cfg.DeliveryCountLimit),
		MaxInFlight:   int64(m.cfg.PartitionMaxRecordLocks),
	}
	if v, ok := groupConfig(im, group, "share.record.lock.duration.ms"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			lim.LockMs = n
		}
	}
	if v, ok := groupConfig(im, group, "share.delivery.count.limit"); ok {
		if n, err := strconv.ParseInt(v, 10, 16); err == nil && n > 0 {
			lim.DeliveryLimit = int16(n)
		}
	}
	return lim
}

func readCommitted(im *cluster.Image, group string) bool {
	v, _ := groupConfig(im, group, "share.isolation.level")
	return v == "read_committed"
}

// LockDurationMs is the acquisition lock duration of a group, as
// ShareFetch and ShareAcknowledge report it.
func (m *Manager) LockDurationMs(group string) int32 {
	return int32(m.limits(m.meta.Image(), group).LockMs)
}

// leaderOf returns the local leader epoch of tp or ErrNotLeader.
func (m *Manager) leaderOf(tp partition.TopicPartition) (int32, error) {
	e, ok := m.reps.Leader(tp)
	if !ok {
		return -1, ErrNotLeader
	}
	return e, nil
}

// stateLocked returns the share partition of group on tp, building it when
// there is none or it was built under another leader or group epoch: from
// the checkpointed start offset if there is one, else by
// share.auto.offset.reset.
func (m *Manager) stateLocked(im *cluster.Image, group string, tp partition.TopicPartition, leaderEpoch int32) (*Partition, error) {
	k := stateKey{group, tp.Topic, tp.Partition}
	gepoch := im.ShareEpoch(group)
	ti := im.Topic(tp.Topic)
	if ti == nil {
		return nil, ErrUnknownTopic
	}
	if st := m.mu.parts[k]; st != nil && st.TopicID == ti.ID && st.LeaderEpoch == leaderEpoch && st.GroupEpoch == gepoch {
		return st, nil
	}
	hw, _, _, err := m.reps.ListOffset(tp, -1, -1, false)
	if err != nil {
		return nil, err
	}
	logStart, _, _, err := m.reps.ListOffset(tp, -2, -1, false)
	if err != nil {
		return nil, err
	}
	start := hw
	if off, _, ok := im.ShareOffset(group, tp.Topic, tp.Partition); ok {
		start = off
	} else {
		reset, _ := groupConfig(im, group, "share.auto.offset.reset")
		switch {
		case reset == "earliest":
			start = logStart
		case strings.HasPrefix(reset, "by_duration:"):
			if d, err := groupcfg.ParseISODuration(strings.TrimPrefix(reset, "by_duration:")); err == nil {
				off, _, _, err := m.reps.ListOffset(tp, m.now().Add(-d).UnixMilli(), -1, false)
				if err == nil && off >= 0 {
					start = off
				}
			}
		}
	}
	start = min(max(start, logStart), hw)
	st := NewPartition(start)
	st.TopicID, st.LeaderEpoch, st.GroupEpoch = ti.ID, leaderEpoch, gepoch
	m.mu.parts[k] = st
	m.sweeper.Wake()
	return st, nil
}

// wakeLocked wakes parked fetches: records became available.
func (m *Manager) wakeLocked() {
	close(m.mu.avail)
	m.mu.avail = make(chan struct{})
}

// PartitionAcks are one partition's acknowledgements.
type PartitionAcks struct {
	TP      TP
	Batches []AckBatch
}

// FetchRequest is a ShareFetch, kmsg-free.
type FetchRequest struct {
	Group, Member string
	SessionEpoch  int32
	// Conn is the connection's context: its end closes the session and
	// releases the member's records, as Kafka does on disconnect.
	Conn       context.Context
	Partitions []TP
	Forget     []TP
	Acks       []PartitionAcks
	MaxWait    time.Duration
	MinBytes   int32
	MaxBytes   int32
	MaxRecords int
	BatchSize  int
	// Renew: acknowledgements only, AckRenew allowed, no fetching.
	Renew      bool
	AllowRenew bool
}

// PartitionResult is one partition of a ShareFetch or ShareAcknowledge
// answer.
type PartitionResult struct {
	TP       TP
	Err      error
	AckErr   error
	Records  []byte
	Acquired []AcquiredRange
}

// Fetch serves a ShareFetch, in steps: under one hold of m.mu the session
// is opened, checked or closed (sessionForFetchLocked) and takes the
// request's partitions and acknowledgements (updateSessionLocked); then,
// unless the request only renews, rounds of acquisition over the
// session's partitions (acquireRound), in an order rotating with the
// epoch, run until one acquires records or fails, or the wait ends.
func (m *Manager) Fetch(ctx context.Context, req FetchRequest) ([]PartitionResult, error) {
	if req.Member == "" || len(req.Member) > 36 || req.Group == "" {
		return nil, ErrInvalidRequest
	}
	im := m.meta.Image()
	sk := sessionKey{req.Group, req.Member}
	res := &fetchResults{byTP: map[TP]*PartitionResult{}}

	m.mu.Lock()
	s, closed, err := m.sessionForFetchLocked(im, sk, req, res)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if closed {
		m.mu.Unlock()
		return res.list(), nil
	}
	targets := m.updateSessionLocked(im, s, req, res)
	epoch := s.epoch
	m.mu.Unlock()
	if req.Renew {
		return res.list(), nil
	}

	targets = rotateTargets(targets, epoch)
	maxRecords := req.MaxRecords
	if maxRecords <= 0 {
		maxRecords = 500
	}
	var deadline <-chan time.Time
	if req.MaxWait > 0 {
		t := time.NewTimer(req.MaxWait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		waits := m.fetchWaits(im, targets)
		got, failed := m.acquireRound(ctx, im, req, targets, maxRecords, res)
		// An error (a partition led elsewhere now) is answered at once, so
		// that the client can move the partition to its new leader.
		if got > 0 || failed || deadline == nil || len(targets) == 0 {
			return res.list(), nil
		}
		if !replication.WaitAny(ctx, deadline, waits) {
			return res.list(), nil
		}
		im = m.meta.Image()
	}
}

// fetchResults are a ShareFetch's answers by partition, listed in the
// order the partitions were first answered.
type fetchResults struct {
	byTP  map[TP]*PartitionResult
	order []TP
}

// get returns tp's answer, adding an empty one if it has none yet.
func (r *fetchResults) get(tp TP) *PartitionResult {
	p := r.byTP[tp]
	if p == nil {
		p = &PartitionResult{TP: tp}
		r.byTP[tp] = p
		r.order = append(r.order, tp)
	}
	return p
}

// list returns the answers in order.
func (r *fetchResults) list() []PartitionResult {
	out := make([]PartitionResult, 0, len(r.order))
	for _, tp := range r.order {
		out = append(out, *r.byTP[tp])
	}
	return out
}

// sessionForFetchLocked applies the request's session epoch (KIP-932).
// Epoch 0 opens a new session, closed when the connection ends, and may
// carry no acknowledgements. Epoch -1 applies the acknowledgements (no
// renewing), releases the member's records and closes the session:
// closed is then true and the request is answered. Any other epoch must
// be the session's current one, which then moves on (wrapping to 1).
// m.mu is held throughout; the caller unlocks, on error too.
func (m *Manager) sessionForFetchLocked(im *cluster.Image, sk sessionKey, req FetchRequest, res *fetchResults) (s *session, closed bool, err error) {
	s = m.mu.sessions[sk]
	switch {
	case req.SessionEpoch == 0:
		if len(req.Acks) > 0 {
			return nil, false, ErrInvalidRequest
		}
		s = &session{epoch: 1, parts: map[TP]struct{}{}}
		m.mu.sessions[sk] = s
		if req.Conn != nil {
			context.AfterFunc(req.Conn, func() { m.closeSession(sk, s) })
		}
	case req.SessionEpoch == -1:
		if s == nil {
			return nil, false, ErrSessionNotFound
		}
		for _, a := range req.Acks {
			res.get(a.TP).AckErr = m.ackLocked(im, req.Group, req.Member, a, false)
		}
		m.releaseSessionLocked(im, sk, s)
		delete(m.mu.sessions, sk)
		return nil, true, nil
	default:
		if s == nil {
			return nil, false, ErrSessionNotFound
		}
		if s.epoch != req.SessionEpoch {
			return nil, false, ErrInvalidSessionEpoch
		}
		s.epoch++
		if s.epoch <= 0 {
			s.epoch = 1
		}
	}
	return s, false, nil
}

// updateSessionLocked adds the request's partitions to the session (a
// partition new to it is answered even if nothing is acquired), forgets
// those it names to forget, then applies its acknowledgements (renewing
// only when the request is a renewal that allows it). It returns the
// session's partitions, in no order. m.mu is held.
func (m *Manager) updateSessionLocked(im *cluster.Image, s *session, req FetchRequest, res *fetchResults) []TP {
	for _, tp := range req.Partitions {
		if _, ok := s.parts[tp]; !ok {
			s.parts[tp] = struct{}{}
			res.get(tp)
		}
	}
	for _, tp := range req.Forget {
		delete(s.parts, tp)
	}
	for _, a := range req.Acks {
		res.get(a.TP).AckErr = m.ackLocked(im, req.Group, req.Member, a, req.AllowRenew && req.Renew)
	}
	targets := make([]TP, 0, len(s.parts))
	for tp := range s.parts {
		targets = append(targets, tp)
	}
	return targets
}

// rotateTargets sorts the partitions by topic id and partition, then
// starts them at a different one for each session epoch, so that one
// busy partition does not take the whole record budget every time.
func rotateTargets(targets []TP, epoch int32) []TP {
	slices.SortFunc(targets, func(a, b TP) int {
		if c := slices.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	if n := len(targets); n > 1 {
		k := int(epoch) % n
		targets = append(targets[k:], targets[:k]...)
	}
	return targets
}

// fetchWaits returns the channels whose closing means a new round may
// acquire something: records available again (released, lock expired),
// or a target's high watermark moving. They are taken before the round
// acquires, so that a change between the attempt and the wait is not
// missed.
func (m *Manager) fetchWaits(im *cluster.Image, targets []TP) []<-chan struct{} {
	m.mu.Lock()
	waits := []<-chan struct{}{m.mu.avail}
	m.mu.Unlock()
	for _, tp := range targets {
		if name, ok := im.IDs[tp.ID]; ok {
			if c := m.reps.HWMoved(partition.TopicPartition{Topic: name, Partition: tp.Partition}); c != nil {
				waits = append(waits, c)
			}
		}
	}
	return waits
}

// acquireRound acquires records from the targets in order, within the
// request's record budget (maxRecords) and byte budget (MaxBytes; none
// when not positive), each acquisition shrinking both. Every target is
// answered, those reached after a budget runs out with nothing. It
// returns how many records it acquired and whether any target failed.
func (m *Manager) acquireRound(ctx context.Context, im *cluster.Image, req FetchRequest, targets []TP, maxRecords int, res *fetchResults) (got int, failed bool) {
	budget, remaining := int64(req.MaxBytes), maxRecords
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	for _, tp := range targets {
		r := res.get(tp)
		if remaining <= 0 || budget <= 0 {
			continue
		}
		recs, ranges, err := m.acquire(ctx, im, req.Group, req.Member, tp, remaining, int32(min(budget, 1<<31-1)))
		r.Err = err
		failed = failed || err != nil
		if len(ranges) > 0 {
			r.Records, r.Acquired = recs, splitRanges(ranges, req.BatchSize)
			for _, a := range ranges {
				got += int(a.Last - a.First + 1)
				remaining -= int(a.Last - a.First + 1)
			}
			budget -= int64(len(recs))
		}
	}
	return got, failed
}

// splitRanges cuts acquired ranges into runs of at most size records
// (ShareFetch's BatchSize, KIP-1206's batch-optimized mode).
func splitRanges(rs []AcquiredRange, size int) []AcquiredRange {
	if size <= 0 {
		return rs
	}
	var out []AcquiredRange
	for _, r := range rs {
		for f := r.First; f <= r.Last; f += int64(size) {
			out = append(out, AcquiredRange{First: f, Last: min(f+int64(size)-1, r.Last), DeliveryCount: r.DeliveryCount})
		}
	}
	return out
}

// acquire reads tp from its first available offset and acquires what it
// read for member. It returns the record batches that hold the acquired
// offsets.
func (m *Manager) acquire(ctx context.Context, im *cluster.Image, group, member string, id TP, maxRecords int, maxBytes int32) ([]byte, []AcquiredRange, error) {
	name, ok := im.IDs[id.ID]
	if !ok {
		return nil, nil, ErrUnknownTopic
	}
	tp := partition.TopicPartition{Topic: name, Partition: id.Partition}
	leaderEpoch, err := m.leaderOf(tp)
	if err != nil {
		return nil, nil, err
	}
	rc := readCommitted(im, group)
	lim := m.limits(im, group)
	for attempt := 0; attempt < 2; attempt++ {
		m.mu.Lock()
		st, err := m.stateLocked(im, group, tp, leaderEpoch)
		if err != nil {
			m.mu.Unlock()
			return nil, nil, err
		}
		off := st.FetchOffset()
		m.mu.Unlock()

		res := m.reps.Fetch(ctx, replication.FetchParams{
			MaxBytes:      maxBytes,
			ReadCommitted: rc,
			Partitions: []replication.FetchPartition{{
				TP: tp, Offset: off, MaxBytes: maxBytes, CurrentLeaderEpoch: -1, LogStartOffset: -1,
			}},
		})[0]
		if res.Err != nil {
			if errors.Is(res.Err, partition.ErrOffsetOutOfRange) && res.LogStartOffset > off {
				m.mu.Lock()
				st.SkipTo(res.LogStartOffset)
				m.mu.Unlock()
				continue
			}
			return nil, nil, res.Err
		}
		limit := res.HighWatermark
		if rc {
			limit = res.LastStableOffset
		}
		spans, bounds := spansOf(res.Records, res.AbortedTransactions, rc)
		m.mu.Lock()
		ranges := st.Acquire(member, m.nowMs(), spans, limit, maxRecords, lim)
		m.mu.Unlock()
		if len(ranges) == 0 {
			return nil, nil, nil
		}
		first, last := ranges[0].First, ranges[len(ranges)-1].Last
		lo, hi := -1, 0
		for i, s := range spans {
			if s.Last < first || s.First > last {
				continue
			}
			if lo < 0 {
				lo = bounds[i]
			}
			hi = bounds[i+1]
		}
		if lo < 0 {
			return nil, nil, nil
		}
		return res.Records[lo:hi], ranges, nil
	}
	return nil, nil, nil
}

// spansOf walks the record batches read and returns their offset spans
// and the byte offset of each batch (bounds[i] starts spans[i],
// bounds[len] is the end). Control batches are skipped; under
// read_committed so are batches of aborted transactions.
func spansOf(b []byte, aborted []idempotent.TxnRange, rc bool) ([]Span, []int) {
	var spans []Span
	bounds := []int{0}
	abortedPIDs := map[int64]bool{}
	ai := 0
	pos := 0
	for pos < len(b) {
		h, err := partition.ParseBatchHeader(b[pos:])
		if err != nil || pos+h.Size() > len(b) {
			break
		}
		skip := h.IsControl()
		if rc {
			for ai < len(aborted) && aborted[ai].FirstOffset <= h.BaseOffset {
				abortedPIDs[aborted[ai].ProducerID] = true
				ai++
			}
			if h.IsControl() {
				if m, _ := partition.ReadControlMarker(b[pos : pos+h.Size()]); !m.Commit {
					delete(abortedPIDs, h.ProducerID)
				}
			} else if h.IsTransactional() && abortedPIDs[h.ProducerID] {
				skip = true
			}
		}
		spans = append(spans, Span{First: h.BaseOffset, Last: h.LastOffset(), Skip: skip})
		pos += h.Size()
		bounds = append(bounds, pos)
	}
	return spans, bounds
}

// ackLocked applies one partition's acknowledgements.
func (m *Manager) ackLocked(im *cluster.Image, group, member string, a PartitionAcks, allowRenew bool) error {
	name, ok := im.IDs[a.TP.ID]
	if !ok {
		return ErrUnknownTopic
	}
	tp := partition.TopicPartition{Topic: name, Partition: a.TP.Partition}
	leaderEpoch, err := m.leaderOf(tp)
	if err != nil {
		return err
	}
	st := m.mu.parts[stateKey{group, name, a.TP.Partition}]
	if st == nil || st.TopicID != a.TP.ID || st.LeaderEpoch != leaderEpoch || st.GroupEpoch != im.ShareEpoch(group) {
		return ErrInvalidRecordState
	}
	released, err := st.Acknowledge(member, m.nowMs(), a.Batches, allowRenew, m.limits(im, group))
	if released {
		m.wakeLocked()
	}
	return err
}

// AckRequest is a ShareAcknowledge, kmsg-free.
type AckRequest struct {
	Group, Member string
	SessionEpoch  int32
	Acks          []PartitionAcks
	Renew         bool
}

// Acknowledge serves a ShareAcknowledge: it needs an open session (epoch
// -1 also closes it, releasing the member's remaining records).
func (m *Manager) Acknowledge(req AckRequest) ([]PartitionResult, error) {
	if req.Member == "" || len(req.Member) > 36 || req.Group == "" {
		return nil, ErrInvalidRequest
	}
	im := m.meta.Image()
	sk := sessionKey{req.Group, req.Member}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.mu.sessions[sk]
	switch {
	case req.SessionEpoch == 0:
		return nil, ErrInvalidSessionEpoch
	case s == nil:
		return nil, ErrSessionNotFound
	case req.SessionEpoch > 0 && s.epoch != req.SessionEpoch:
		return nil, ErrInvalidSessionEpoch
	}
	out := make([]PartitionResult, 0, len(req.Acks))
	for _, a := range req.Acks {
		out = append(out, PartitionResult{TP: a.TP, AckErr: m.ackLocked(im, req.Group, req.Member, a, req.Renew)})
	}
	if req.SessionEpoch == -1 {
		m.releaseSessionLocked(im, sk, s)
		delete(m.mu.sessions, sk)
	} else {
		s.epoch++
		if s.epoch <= 0 {
			s.epoch = 1
		}
	}
	return out, nil
}

// releaseSessionLocked releases what the session's member holds on the
// session's partitions.
func (m *Manager) releaseSessionLocked(im *cluster.Image, sk sessionKey, s *session) {
	lim := m.limits(im, sk.group)
	woke := false
	for tp := range s.parts {
		name, ok := im.IDs[tp.ID]
		if !ok {
			continue
		}
		if st := m.mu.parts[stateKey{sk.group, name, tp.Partition}]; st != nil && st.ReleaseMember(sk.member, lim) {
			woke = true
		}
	}
	if woke {
		m.wakeLocked()
	}
}

// closeSession runs when the connection that opened s ends.
func (m *Manager) closeSession(sk sessionKey, s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.sessions[sk] != s {
		return
	}
	delete(m.mu.sessions, sk)
	m.releaseSessionLocked(m.meta.Image(), sk, s)
}

// sweepInterval is how often lock expiry is checked, and whether a
// checkpoint is due.
const sweepInterval = 250 * time.Millisecond

// expire releases expired locks and drops the share partitions of
// partitions this broker no longer leads.
func (m *Manager) expire() {
	im := m.meta.Image()
	now := m.nowMs()
	m.mu.Lock()
	defer m.mu.Unlock()
	woke := false
	for k, st := range m.mu.parts {
		tp := partition.TopicPartition{Topic: k.topic, Partition: k.partition}
		if e, err := m.leaderOf(tp); err != nil || e != st.LeaderEpoch {
			delete(m.mu.parts, k)
			continue
		}
		if st.Expire(now, m.limits(im, k.group)) {
			woke = true
		}
	}
	if woke {
		m.wakeLocked()
	}
}

// checkpoint writes the start offsets that moved to the metadata quorum,
// one change per group.
func (m *Manager) checkpoint() {
	if m.writer == nil {
		return
	}
	type cp struct {
		epoch   int32
		offsets map[string]map[int32]int64
		parts   []*Partition
	}
	byGroup := map[string]*cp{}
	m.mu.Lock()
	for k, st := range m.mu.parts {
		if !st.Dirty {
			continue
		}
		c := byGroup[k.group]
		if c == nil {
			c = &cp{epoch: st.GroupEpoch, offsets: map[string]map[int32]int64{}}
			byGroup[k.group] = c
		}
		if st.GroupEpoch != c.epoch {
			continue
		}
		if c.offsets[k.topic] == nil {
			c.offsets[k.topic] = map[int32]int64{}
		}
		c.offsets[k.topic][k.partition] = st.StartOffset()
		c.parts = append(c.parts, st)
		st.Dirty = false
	}
	m.mu.Unlock()
	for group, c := range byGroup {
		ctx, cancel := context.WithTimeout(m.bg, 10*time.Second)
		err := m.writer.UpdateShareState(ctx, cluster.ShareChange{Group: group, Epoch: c.epoch, Offsets: c.offsets})
		cancel()
		if err != nil {
			m.logger.Warn().Err(err).Str("group", group).Msg("share offsets checkpoint failed")
			m.mu.Lock()
			for _, st := range c.parts {
				st.Dirty = true
			}
			m.mu.Unlock()
		}
	}
}

// OffsetInfo describes one share partition for DescribeShareGroupOffsets.
type OffsetInfo struct {
	Topic       string
	Partition   int32
	StartOffset int64
	LeaderEpoch int32
	Lag         int64
}

// Offsets describes group's share partitions: the live state for those
// led here, the checkpoint otherwise. topics nil means every partition the
// group has state for.
func (m *Manager) Offsets(group string, topics map[string][]int32) []OffsetInfo {
	im := m.meta.Image()
	if topics == nil {
		topics = map[string][]int32{}
		if sg := im.ShareGroups[group]; sg != nil {
			for t, ps := range sg.Offsets {
				for p := range ps {
					topics[t] = append(topics[t], p)
				}
			}
		}
		m.mu.Lock()
		for k := range m.mu.parts {
			if k.group == group && !slices.Contains(topics[k.topic], k.partition) {
				topics[k.topic] = append(topics[k.topic], k.partition)
			}
		}
		m.mu.Unlock()
	}
	var out []OffsetInfo
	for t, ps := range topics {
		for _, p := range ps {
			oi := OffsetInfo{Topic: t, Partition: p, StartOffset: -1, LeaderEpoch: -1, Lag: -1}
			if pi := im.Partition(t, p); pi != nil {
				oi.LeaderEpoch = pi.LeaderEpoch
			}
			tp := partition.TopicPartition{Topic: t, Partition: p}
			hw, _, _, hwErr := m.reps.ListOffset(tp, -1, -1, false)
			m.mu.Lock()
			st := m.mu.parts[stateKey{group, t, p}]
			if ti := im.Topic(t); st != nil && ti != nil && st.TopicID == ti.ID && st.GroupEpoch == im.ShareEpoch(group) {
				oi.StartOffset = st.StartOffset()
				if hwErr == nil {
					oi.Lag = st.Lag(hw)
				}
			}
			m.mu.Unlock()
			if oi.StartOffset < 0 {
				if off, _, ok := im.ShareOffset(group, t, p); ok {
					oi.StartOffset = off
					if hwErr == nil {
						oi.Lag = max(hw-off, 0)
					}
				}
			}
			out = append(out, oi)
		}
	}
	slices.SortFunc(out, func(a, b OffsetInfo) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// Reset sets (offsets) or deletes (deleteTopics) group's start offsets
// through the quorum; leaders rebuild their share partitions from them.
func (m *Manager) Reset(ctx context.Context, group string, offsets map[string]map[int32]int64, deleteTopics []string) error {
	if m.writer == nil {
		return fmt.Errorf("%w: share offsets cannot be written here", ErrCoordinatorUnavailable)
	}
	return m.writer.UpdateShareState(ctx, cluster.ShareChange{Group: group, Reset: true, Offsets: offsets, DeleteTopics: deleteTopics})
}

// DeleteGroup forgets group's start offsets everywhere.
func (m *Manager) DeleteGroup(ctx context.Context, group string) error {
	if m.writer == nil {
		return nil
	}
	if m.meta.Image().ShareGroups[group] == nil {
		return nil
	}
	return m.writer.UpdateShareState(ctx, cluster.ShareChange{Group: group, DeleteGroup: true})
}

// HasState reports whether group has share offsets anywhere.
func (m *Manager) HasState(group string) bool {
	sg := m.meta.Image().ShareGroups[group]
	return sg != nil && len(sg.Offsets) > 0
}

package group

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// consumerProtocolType is the protocol type of Kafka consumers; only for it
// does the coordinator read the members' subscriptions.
const consumerProtocolType = "consumer"

// validateOffsetCommit is Kafka's rule for who may commit: anyone to an
// empty group with generation -1 (admin tools, consumers without group
// management), otherwise only a current member at the current generation.
func (g *classicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32) error {
	switch {
	case g.state == StateDead:
		return ErrCoordinatorNotAvailable
	case generation < 0 && g.state == StateEmpty:
		return nil
	case generation >= 0 || memberID != "" || instanceID != nil:
		if err := g.validateMember(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.generation {
			return ErrIllegalGeneration
		}
		return nil
	case g.state != StateEmpty:
		return ErrUnknownMemberID
	}
	return nil
}

// subscribedTopics returns the topics the members of a consumer group
// subscribe to, read from their subscriptions (ConsumerProtocol: version
// int16, topics [string], ...); ok is false when they are unknown.
func (g *classicGroup) subscribedTopics() (topics map[string]bool, ok bool) {
	if g.protocolType == nil || *g.protocolType != consumerProtocolType || g.protocolName == nil {
		return nil, false
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		md := m.metadataFor(*g.protocolName)
		r := kbin.Reader{Src: md}
		r.Int16()
		n := r.ArrayLen()
		if !r.Ok() || n < 0 || int(n) > len(md) {
			return nil, false
		}
		for range n {
			topics[r.String()] = true
		}
		if !r.Ok() {
			return nil, false
		}
	}
	return topics, true
}

// expiredOffsets returns the offsets past retention, as Kafka's
// GroupMetadata.removeExpiredOffsets decides: for an empty group counted
// from when it became empty; for a group that only stores offsets from the
// commit; for a stable consumer group only offsets of topics it no longer
// subscribes to. An explicit expire timestamp (OffsetCommit v2-v4) wins.
func (g *classicGroup) expiredOffsets(nowMs, retentionMs int64) []TopicPartition {
	var base func(o OffsetAndMetadata) int64
	var subscribed map[string]bool
	switch {
	case g.protocolType != nil && g.state == StateEmpty:
		base = func(OffsetAndMetadata) int64 { return g.stateTimestamp }
	case g.protocolType == nil:
		base = func(o OffsetAndMetadata) int64 { return o.CommitTimestamp }
	case g.state == StateStable:
		topics, ok := g.subscribedTopics()
		if !ok {
			return nil
		}
		subscribed = topics
		base = func(o OffsetAndMetadata) int64 { return o.CommitTimestamp }
	default:
		return nil
	}
	var out []TopicPartition
	for tp, o := range g.offsets {
		if g.pendingCommits[tp] > 0 || subscribed[tp.Topic] {
			continue
		}
		if o.ExpireTimestamp >= 0 && nowMs >= o.ExpireTimestamp ||
			o.ExpireTimestamp < 0 && nowMs-base(o) >= retentionMs {
			out = append(out, tp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// CommitOffset is one offset to commit.
type CommitOffset struct {
	TP TopicPartition
	OffsetAndMetadata
}

// CommitParams is an OffsetCommit request.
type CommitParams struct {
	MemberID   string
	InstanceID *string
	// Generation is -1 for commits outside group management; for a
	// consumer-protocol group it is the member epoch.
	Generation int32
	Offsets    []CommitOffset
	// APIVersion is the request's version: members of a consumer-protocol
	// group must commit with OffsetCommit v9+.
	APIVersion int16
}

// CommitOffsets stores offsets; they are acknowledged only once the write
// to __consumer_offsets is. It returns one error per offset.
func (c *Coordinator) CommitOffsets(ctx context.Context, groupID string, p CommitParams) []error {
	errs := make([]error, len(p.Offsets))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if _, err := c.validateGroup(groupID, true); err != nil {
		return fail(err)
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return fail(err)
	}
	if e == nil {
		if p.Generation >= 0 {
			// A commit from an older generation of a group that is gone.
			return fail(ErrIllegalGeneration)
		}
		if e, err = c.entry(groupID, true); err != nil {
			return fail(err)
		}
	}

	e.mu.Lock()
	g := e.g
	if err := e.validateCommitLocked(p, false); err != nil {
		e.mu.Unlock()
		return fail(err)
	}
	now := c.nowMs()
	switch g.state {
	case StateCompletingRebalance:
		// The member has its JoinGroup answer but not its assignment;
		// REBALANCE_IN_PROGRESS makes it finish the rebalance first.
		e.mu.Unlock()
		return fail(ErrRebalanceInProgress)
	case StateStable, StatePreparingRebalance:
		// Commits are allowed while rebalancing; the heartbeat answer
		// tells the member about the rebalance.
		if m := g.members[p.MemberID]; m != nil {
			g.scheduleSession(m, now, int64(m.sessionTimeoutMs))
		}
	}
	var recs []record
	var written []CommitOffset
	for i, o := range p.Offsets {
		if len(o.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			errs[i] = ErrOffsetMetadataTooLarge
			continue
		}
		recs = append(recs, record{key: offsetKey(groupID, o.TP), value: encodeOffsetValue(o.OffsetAndMetadata)})
		written = append(written, o)
		g.pendingCommits[o.TP]++
	}
	c.rescheduleLocked(e)
	if len(recs) == 0 {
		e.mu.Unlock()
		return errs
	}
	ch := make(chan error, 1)
	e.part.app.enqueue(recs, func(err error) {
		err = convertAppendError(err, true)
		e.mu.Lock()
		for _, o := range written {
			if g.pendingCommits[o.TP]--; g.pendingCommits[o.TP] <= 0 {
				delete(g.pendingCommits, o.TP)
			}
			if err == nil && g.state != StateDead {
				g.offsets[o.TP] = o.OffsetAndMetadata
			}
		}
		e.mu.Unlock()
		ch <- err
	})
	e.mu.Unlock()
	return awaitWrite(ctx, ch, errs)
}

// FetchedOffset is one answer of FetchOffsets; Offset is -1 when nothing is
// committed.
type FetchedOffset struct {
	TP TopicPartition
	OffsetAndMetadata
	// Pending is set when a transaction not yet decided holds an offset
	// for the partition (OffsetFetch's require_stable answers
	// UNSTABLE_OFFSET_COMMIT for it, KIP-447).
	Pending bool
}

// FetchOffsets returns the committed offsets of tps, or all of the group's
// when tps is nil. Offsets are returned whatever the group's state: a group
// may use Kafka only to store offsets.
func (c *Coordinator) FetchOffsets(groupID string, tps []TopicPartition) ([]FetchedOffset, error) {
	return c.FetchOffsetsAs(groupID, nil, -1, tps)
}

// FetchOffsetsAs is FetchOffsets for a member (OffsetFetch v9+): a member
// of a consumer-protocol group must give its current member epoch
// (STALE_MEMBER_EPOCH otherwise). Classic groups do not check it.
func (c *Coordinator) FetchOffsetsAs(groupID string, memberID *string, memberEpoch int32, tps []TopicPartition) ([]FetchedOffset, error) {
	if _, err := c.validateGroup(groupID, true); err != nil {
		return nil, err
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return nil, err
	}
	none := OffsetAndMetadata{Offset: -1, LeaderEpoch: -1, ExpireTimestamp: -1}
	var out []FetchedOffset
	if e == nil {
		for _, tp := range tps {
			out = append(out, FetchedOffset{TP: tp, OffsetAndMetadata: none})
		}
		return out, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cg != nil {
		if err := e.cg.validateOffsetFetch(memberID, memberEpoch); err != nil {
			return nil, err
		}
	}
	pending := func(tp TopicPartition) bool {
		for _, m := range e.g.txnOffsets {
			if _, ok := m[tp]; ok {
				return true
			}
		}
		return false
	}
	if tps == nil {
		for tp, o := range e.g.offsets {
			out = append(out, FetchedOffset{TP: tp, OffsetAndMetadata: o, Pending: pending(tp)})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].TP.Topic != out[j].TP.Topic {
				return out[i].TP.Topic < out[j].TP.Topic
			}
			return out[i].TP.Partition < out[j].TP.Partition
		})
		return out, nil
	}
	for _, tp := range tps {
		o, ok := e.g.offsets[tp]
		if !ok {
			o = none
		}
		out = append(out, FetchedOffset{TP: tp, OffsetAndMetadata: o, Pending: pending(tp)})
	}
	return out, nil
}

// removeGroup drops a Dead group from the map, unless it was replaced.
func (c *Coordinator) removeGroup(e *groupEntry) {
	c.mu.Lock()
	if c.mu.groups[e.g.id] == e {
		delete(c.mu.groups, e.g.id)
	}
	c.mu.Unlock()
}

// killLocked makes an empty group Dead and queues the tombstones of its
// record and its offsets; done gets the write's outcome.
func (c *Coordinator) killLocked(e *groupEntry, done func(error)) {
	g := e.g
	g.transition(StateDead, c.nowMs())
	recs := []record{{key: groupKey(g.id)}}
	for tp := range g.offsets {
		recs = append(recs, record{key: offsetKey(g.id, tp)})
	}
	clear(g.offsets)
	c.rescheduleLocked(e)
	if e.cg != nil {
		e.cg.unload()
	}
	// A consumer group's records go with it.
	recs = append(c.consumerDiffLocked(e), recs...)
	e.part.app.enqueue(recs, done)
}

// DeleteGroups deletes empty groups and their offsets; one error per group.
func (c *Coordinator) DeleteGroups(ctx context.Context, groupIDs []string) []error {
	errs := make([]error, len(groupIDs))
	chans := make([]chan error, len(groupIDs))
	for i, id := range groupIDs {
		if _, err := c.validateGroup(id, true); err != nil {
			errs[i] = err
			continue
		}
		e, err := c.entry(id, false)
		if err != nil {
			errs[i] = err
			continue
		}
		if e == nil {
			errs[i] = ErrGroupIDNotFound
			continue
		}
		e.mu.Lock()
		switch {
		case e.g.state == StateDead:
			errs[i] = ErrGroupIDNotFound
		case e.cg != nil && !e.cg.isEmpty():
			errs[i] = ErrNonEmptyGroup
		case e.g.state == StateEmpty:
			if e.cg != nil {
				e.cg.unload()
			}
			ch := make(chan error, 1)
			chans[i] = ch
			c.killLocked(e, func(err error) { ch <- convertAppendError(err, false) })
		default:
			errs[i] = ErrNonEmptyGroup
		}
		e.mu.Unlock()
		if chans[i] != nil {
			c.removeGroup(e)
		}
	}
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		select {
		case errs[i] = <-ch:
		case <-ctx.Done():
			errs[i] = ErrCoordinatorNotAvailable
		}
	}
	return errs
}

// DeleteOffsets deletes committed offsets (OffsetDelete). A consumer group
// with members keeps the offsets of topics it subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC). It returns a group-level error or one error
// per partition.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, tps []TopicPartition) (error, []error) {
	if _, err := c.validateGroup(groupID, false); err != nil {
		return err, nil
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return err, nil
	}
	if e == nil {
		return ErrGroupIDNotFound, nil
	}
	errs := make([]error, len(tps))
	view := c.topicsView()
	e.mu.Lock()
	g := e.g
	subscribed848, is848 := e.consumerSubscribedLocked(view)
	switch {
	case g.state == StateDead:
		e.mu.Unlock()
		return ErrGroupIDNotFound, nil
	case is848:
		for i, tp := range tps {
			if subscribed848[tp.Topic] {
				errs[i] = ErrGroupSubscribedToTopic
			}
		}
	case g.state == StateEmpty:
	default:
		subscribed, ok := g.subscribedTopics()
		if g.protocolType == nil || *g.protocolType != consumerProtocolType {
			e.mu.Unlock()
			return ErrNonEmptyGroup, nil
		}
		for i, tp := range tps {
			if !ok || subscribed[tp.Topic] {
				errs[i] = ErrGroupSubscribedToTopic
			}
		}
	}
	var recs []record
	var idx []int
	for i, tp := range tps {
		if errs[i] != nil {
			continue
		}
		idx = append(idx, i)
		if _, ok := g.offsets[tp]; ok {
			delete(g.offsets, tp)
			recs = append(recs, record{key: offsetKey(groupID, tp)})
		}
	}
	if len(recs) == 0 {
		e.mu.Unlock()
		return nil, errs
	}
	ch := make(chan error, 1)
	e.part.app.enqueue(recs, func(err error) { ch <- convertAppendError(err, false) })
	e.mu.Unlock()
	var werr error
	select {
	case werr = <-ch:
	case <-ctx.Done():
		werr = ErrCoordinatorNotAvailable
	}
	for _, i := range idx {
		errs[i] = werr
	}
	return nil, errs
}

// expireLoop runs the offsets retention sweep every
// offsets.retention.check.interval.ms.
func (c *Coordinator) expireLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.OffsetsRetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.ExpireOffsets()
		}
	}
}

// ExpireOffsets removes offsets past retention, writing their tombstones,
// and deletes groups left empty with no offsets. It returns how many
// offsets and groups it removed.
func (c *Coordinator) ExpireOffsets() (offsets, groups int) {
	c.mu.Lock()
	var entries []*groupEntry
	for _, e := range c.mu.groups {
		if e.part.Loaded {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	retention := c.cfg.OffsetsRetention.Milliseconds()
	for _, e := range entries {
		e.mu.Lock()
		g := e.g
		if g.state == StateDead || e.cg != nil && !e.cg.isEmpty() {
			// A consumer group with members keeps its offsets, as a
			// Stable classic group keeps those it subscribes to.
			e.mu.Unlock()
			continue
		}
		now := c.nowMs()
		expired := g.expiredOffsets(now, retention)
		var recs []record
		for _, tp := range expired {
			delete(g.offsets, tp)
			recs = append(recs, record{key: offsetKey(g.id, tp)})
		}
		offsets += len(expired)
		if len(recs) > 0 {
			e.part.app.enqueue(recs, func(error) {})
		}
		dead := g.state == StateEmpty && len(g.offsets) == 0 && len(g.pendingCommits) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0
		if dead {
			if e.cg != nil {
				e.cg.unload()
			}
			c.killLocked(e, func(error) {})
			groups++
		}
		e.mu.Unlock()
		if dead {
			c.removeGroup(e)
		}
	}
	if offsets > 0 || groups > 0 {
		c.logger.Info().Int("offsets", offsets).Int("groups", groups).Msg("expired committed offsets and empty groups")
	}
	return offsets, groups
}

// GroupOverview is one group as ListGroups reports it.
type GroupOverview struct {
	GroupID      string
	ProtocolType string
	State        State
	// Type is "classic" or "consumer" (KIP-848); StateName is the state
	// as the group's type names it.
	Type      string
	StateName string
}

// ListGroups lists the groups of the loaded partitions, filtered by state
// name (case-insensitive) when states is non-empty. The error is
// COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading; the
// groups already loaded are listed anyway.
func (c *Coordinator) ListGroups(states []string) ([]GroupOverview, error) {
	c.mu.Lock()
	if c.own.ClosedLocked() {
		c.mu.Unlock()
		return nil, ErrCoordinatorNotAvailable
	}
	var err error
	if c.own.LoadingLocked() {
		err = ErrCoordinatorLoading
	}
	entries := make([]*groupEntry, 0, len(c.mu.groups))
	for _, e := range c.mu.groups {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	want := map[string]bool{}
	for _, s := range states {
		want[strings.ToLower(s)] = true
	}
	var out []GroupOverview
	for _, e := range entries {
		e.mu.Lock()
		o := GroupOverview{GroupID: e.g.id, State: e.g.state, Type: "classic", StateName: e.g.state.String()}
		if e.g.protocolType != nil {
			o.ProtocolType = *e.g.protocolType
		}
		if e.cg != nil && e.g.state != StateDead {
			o.Type, o.ProtocolType, o.StateName = "consumer", consumerProtocolType, e.cg.state.String()
		}
		e.mu.Unlock()
		if o.State == StateDead || len(want) > 0 && !want[strings.ToLower(o.StateName)] {
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out, err
}

// MemberSummary is one member as DescribeGroups reports it.
type MemberSummary struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// GroupSummary is a group as DescribeGroups reports it. Metadata and
// assignments are given only when the group is Stable, as in Kafka.
type GroupSummary struct {
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberSummary
}

// DescribeGroup describes a group; a group that does not exist is
// reported Dead without error.
func (c *Coordinator) DescribeGroup(groupID string) (GroupSummary, error) {
	if _, err := c.validateGroup(groupID, true); err != nil {
		return GroupSummary{}, err
	}
	e, err := c.entry(groupID, false)
	if err != nil {
		return GroupSummary{}, err
	}
	if e == nil {
		return GroupSummary{State: StateDead}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cg != nil && e.g.state != StateDead {
		// Kafka describes a consumer-protocol group only through
		// ConsumerGroupDescribe; DescribeGroups below v6 (all gokafka
		// serves) reports it as it reports an unknown group: Dead, no
		// error. v6 would answer GROUP_ID_NOT_FOUND "is not a classic
		// group".
		return GroupSummary{State: StateDead}, nil
	}
	g := e.g
	s := GroupSummary{State: g.state}
	if g.protocolType != nil {
		s.ProtocolType = *g.protocolType
	}
	stable := g.state == StateStable && g.protocolName != nil
	if stable {
		s.Protocol = *g.protocolName
	}
	for _, id := range g.order {
		m := g.members[id]
		ms := MemberSummary{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			ms.Metadata, ms.Assignment = m.metadataFor(s.Protocol), m.assignment
		}
		s.Members = append(s.Members, ms)
	}
	return s, nil
}

// awaitWrite waits for a queued offsets write and gives its outcome to
// every entry of errs not already failed; a caller that gives up first
// gets COORDINATOR_NOT_AVAILABLE (the write may still land).
func awaitWrite(ctx context.Context, ch <-chan error, errs []error) []error {
	var werr error
	select {
	case werr = <-ch:
	case <-ctx.Done():
		werr = ErrCoordinatorNotAvailable
	}
	for i := range errs {
		if errs[i] == nil {
			errs[i] = werr
		}
	}
	return errs
}

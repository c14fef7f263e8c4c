package group

// The consumer group protocol's state machine (KIP-848), after Kafka 4's
// ConsumerGroup, GroupMetadataManager and CurrentAssignmentBuilder. Like
// classic.go it does no I/O, starts no goroutines and reads no clock: each
// method takes the time in milliseconds and the coordinator calls tick when
// nextDeadline passes. The cluster's topics come in as a TopicsView.
//
// Three epochs drive it:
//   - the group epoch grows whenever what the assignment depends on
//     changes: a member joins or leaves, a subscription or the assignor
//     changes, a subscribed topic is created, deleted or gains partitions;
//   - the target assignment epoch is the group epoch the target assignment
//     (computed by the server-side assignor) was computed for;
//   - each member's epoch is the target assignment epoch it has reached.
//
// A member moves towards its target one heartbeat at a time
// (reconcileMember): it first gives up the partitions it owns that the
// target no longer gives it, keeping its epoch until it acknowledges the
// revocation by heartbeating without them (UNREVOKED_PARTITIONS); then it
// takes the target epoch and the partitions of its target that nobody owns.
// A partition still owned by another member (assigned to it, or being
// revoked from it) is withheld until that member releases it
// (UNRELEASED_PARTITIONS). So no partition is ever owned by two members.
//
// Deadlines, each acted on by tick:
//   - session: a member that does not heartbeat for
//     group.consumer.session.timeout.ms is removed (a static member that
//     left with epoch -2 keeps its assignment until then);
//   - rebalance: a member asked to revoke partitions that does not
//     acknowledge within its rebalance timeout is removed.
//
// The coordinator persists the group's state as Kafka's ConsumerGroup*
// records (records_consumer.go) and rebuilds it on load
// (loadConsumerGroup), so a coordinator change keeps members and epochs.

import (
	"cmp"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gokafka/gokafka/cluster"
)

// ConsumerState is a consumer group's state; String gives Kafka's names.
type ConsumerState int8

const (
	ConsumerEmpty ConsumerState = iota
	ConsumerAssigning
	ConsumerReconciling
	ConsumerStable
	ConsumerDead
)

func (s ConsumerState) String() string {
	switch s {
	case ConsumerEmpty:
		return "Empty"
	case ConsumerAssigning:
		return "Assigning"
	case ConsumerReconciling:
		return "Reconciling"
	case ConsumerStable:
		return "Stable"
	case ConsumerDead:
		return "Dead"
	}
	return "Unknown"
}

// Special member epochs of ConsumerGroupHeartbeat.
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// Server-side assignors; the first is the default.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Assignors lists the server-side assignors, the default first.
var Assignors = []string{AssignorUniform, AssignorRange}

// TopicPartitionID names a partition by topic id, as the consumer protocol
// does.
type TopicPartitionID struct {
	Topic     cluster.TopicID
	Partition int32
}

type partSet map[TopicPartitionID]struct{}

func (s partSet) has(tp TopicPartitionID) bool { _, ok := s[tp]; return ok }

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if !o.has(tp) {
			return false
		}
	}
	return true
}

// byTopic returns the set grouped by topic, partitions sorted.
func (s partSet) byTopic() map[cluster.TopicID][]int32 {
	out := make(map[cluster.TopicID][]int32)
	for tp := range s {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

func partSetOf(m map[cluster.TopicID][]int32) partSet {
	out := make(partSet)
	for id, ps := range m {
		for _, p := range ps {
			out[TopicPartitionID{id, p}] = struct{}{}
		}
	}
	return out
}

// TopicMeta is one topic as the consumer protocol sees it.
type TopicMeta struct {
	Name       string
	ID         cluster.TopicID
	Partitions int32
}

// TopicsView is the cluster's topics at one metadata version; it is
// immutable once built.
type TopicsView struct {
	byName map[string]TopicMeta
	byID   map[cluster.TopicID]TopicMeta
	names  []string // sorted
}

// NewTopicsView builds a view from topic metadata.
func NewTopicsView(topics []TopicMeta) *TopicsView {
	v := &TopicsView{byName: map[string]TopicMeta{}, byID: map[cluster.TopicID]TopicMeta{}}
	for _, t := range topics {
		v.byName[t.Name] = t
		v.byID[t.ID] = t
		v.names = append(v.names, t.Name)
	}
	sort.Strings(v.names)
	return v
}

func topicsViewOf(im *cluster.Image) *TopicsView {
	var ts []TopicMeta
	for name, t := range im.Topics {
		ts = append(ts, TopicMeta{Name: name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	return NewTopicsView(ts)
}

// equal reports whether two views hold the same topics.
func (v *TopicsView) equal(o *TopicsView) bool {
	if len(v.byName) != len(o.byName) {
		return false
	}
	for name, t := range v.byName {
		if o.byName[name] != t {
			return false
		}
	}
	return true
}

// Name returns the name of a topic id, "" if unknown.
func (v *TopicsView) Name(id cluster.TopicID) string { return v.byID[id].Name }

type memberState int8

const (
	memberStable memberState = iota
	memberUnrevoked
	memberUnreleased
)

func (s memberState) String() string {
	switch s {
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	state     memberState

	rebalanceTimeoutMs int32
	topics             []string // sorted, unique
	regex              string   // "" when none
	re                 *regexp.Regexp
	assignor           string // "" for the group's default

	// assigned are the partitions the member owns and keeps; revoking
	// those it owns and must give up. Invariant: disjoint, and every
	// partition in either is owned by this member in the group's owners.
	assigned partSet
	revoking partSet

	sessionDeadline   int64
	rebalanceDeadline int64 // noDeadline unless revoking

	// classic is set for a member speaking the classic protocol
	// (JoinGroup/SyncGroup/Heartbeat) inside the group (migrate.go);
	// classicDeadline is then when it is removed for not rejoining or
	// syncing in time, noDeadline if it owes neither.
	classic         *classicMemberMeta
	classicDeadline int64
}

// subscribes reports whether the member subscribes to topic name.
func (m *consumerMember) subscribes(name string) bool {
	if _, ok := slices.BinarySearch(m.topics, name); ok {
		return true
	}
	return m.re != nil && m.re.MatchString(name)
}

// consumerDeps is what a consumer group needs from its coordinator.
type consumerDeps struct {
	sessionTimeoutMs    int64
	heartbeatIntervalMs int32
	maxSize             int
	newMemberID         func() string
}

// consumerGroup is one KIP-848 group's membership. Its committed offsets
// stay in the entry's classicGroup, which is kept Empty meanwhile.
type consumerGroup struct {
	id   string
	deps *consumerDeps

	state           ConsumerState
	groupEpoch      int32
	assignmentEpoch int32
	// assignorName is the assignor the target assignment was computed by.
	assignorName string

	members map[string]*consumerMember
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// target is the target assignment by member id, at assignmentEpoch.
	target map[string]partSet
	// owners maps each owned partition (assigned or being revoked) to its
	// member. A partition is given to a member only when it has no owner.
	owners map[TopicPartitionID]string

	// subscribed is the metadata of the subscribed topics the group epoch
	// last accounted for; a change bumps the epoch.
	subscribed string
	// subscribedView is the view subscribed was computed from; an
	// unchanged view with unchanged subscriptions needs no recomputation.
	subscribedView *TopicsView
	// membership counts members added, removed and renamed: while it and
	// the epochs stay put, a heartbeat changes only its own member's
	// records.
	membership uint64
}

func newConsumerGroup(id string, deps *consumerDeps) *consumerGroup {
	return &consumerGroup{
		id:      id,
		deps:    deps,
		members: map[string]*consumerMember{},
		static:  map[string]string{},
		target:  map[string]partSet{},
		owners:  map[TopicPartitionID]string{},
	}
}

// isEmpty reports whether the group has no members.
func (g *consumerGroup) isEmpty() bool { return len(g.members) == 0 }

// ConsumerHeartbeat is a ConsumerGroupHeartbeat request. Nil fields are
// unchanged since the member's last heartbeat.
type ConsumerHeartbeat struct {
	Version            int16
	MemberID           string
	MemberEpoch        int32
	InstanceID         *string
	RackID             *string
	RebalanceTimeoutMs int32
	TopicNames         []string
	TopicRegex         *string
	ServerAssignor     *string
	// Owned are the partitions the member owns, nil when unchanged.
	Owned      map[cluster.TopicID][]int32
	ClientID   string
	ClientHost string
}

// ConsumerHeartbeatResult answers a ConsumerGroupHeartbeat.
type ConsumerHeartbeatResult struct {
	Err                 error
	ErrMessage          string
	MemberID            string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	// Assignment is set when the member must be told its assignment.
	Assignment map[cluster.TopicID][]int32
}

func hbError(err error, msg string) ConsumerHeartbeatResult {
	return ConsumerHeartbeatResult{Err: err, ErrMessage: msg, MemberEpoch: -1}
}

// validateConsumerHeartbeat is Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateConsumerHeartbeat(p *ConsumerHeartbeat) (error, string) {
	switch {
	case p.Version >= 1 && p.MemberID == "":
		return ErrInvalidRequest, "MemberId can't be empty."
	case p.MemberEpoch != joinEpoch && p.MemberID == "":
		return ErrInvalidRequest, "MemberId can't be empty."
	case p.InstanceID != nil && *p.InstanceID == "":
		return ErrInvalidRequest, "InstanceId can't be empty."
	case p.RackID != nil && *p.RackID == "":
		return ErrInvalidRequest, "RackId can't be empty."
	case p.MemberEpoch < staticLeaveEpoch:
		return ErrInvalidRequest, "MemberEpoch is invalid."
	case p.MemberEpoch == staticLeaveEpoch && p.InstanceID == nil:
		return ErrInvalidRequest, "InstanceId can't be null."
	}
	if p.MemberEpoch == joinEpoch {
		switch {
		case p.RebalanceTimeoutMs <= 0:
			return ErrInvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case p.Owned == nil || len(p.Owned) > 0:
			return ErrInvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case p.TopicNames == nil && p.TopicRegex == nil:
			return ErrInvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	// An empty regex, like an empty list of names, subscribes to nothing:
	// Kafka accepts such members.
	if p.TopicRegex != nil && *p.TopicRegex != "" {
		if _, err := compileSubscription(*p.TopicRegex); err != nil {
			return ErrInvalidRegularExpression, "SubscribedTopicRegex is not a valid regular expression: " + err.Error()
		}
	}
	if p.ServerAssignor != nil && !slices.Contains(Assignors, *p.ServerAssignor) {
		return ErrUnsupportedAssignor, "ServerAssignor " + *p.ServerAssignor + " is not supported. Supported assignors: " + strings.Join(Assignors, ", ") + "."
	}
	return nil, ""
}

// compileSubscription compiles a subscription regex; like Kafka's RE2J
// matches() it must match the whole topic name.
func compileSubscription(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// heartbeat serves a ConsumerGroupHeartbeat. The caller has validated it.
func (g *consumerGroup) heartbeat(nowMs int64, view *TopicsView, p *ConsumerHeartbeat) ConsumerHeartbeatResult {
	if p.MemberEpoch == leaveEpoch || p.MemberEpoch == staticLeaveEpoch {
		return g.leave(p)
	}
	var m *consumerMember
	changed := false
	if p.MemberEpoch == joinEpoch {
		var r *ConsumerHeartbeatResult
		m, changed, r = g.join(p)
		if r != nil {
			return *r
		}
	} else {
		m = g.members[p.MemberID]
		if m == nil || m.classic != nil {
			return hbError(ErrUnknownMemberID, "Member "+p.MemberID+" is not a member of group "+g.id+".")
		}
		if p.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *p.InstanceID) {
			return hbError(ErrFencedInstanceID, "")
		}
		if err := m.checkEpoch(p.MemberEpoch, p.Owned); err != nil {
			return hbError(err, "")
		}
	}

	// Update the member from the request.
	if p.RebalanceTimeoutMs > 0 {
		m.rebalanceTimeoutMs = p.RebalanceTimeoutMs
	}
	if p.ClientID != "" {
		m.clientID = p.ClientID
	}
	if p.ClientHost != "" {
		m.clientHost = p.ClientHost
	}
	if p.RackID != nil && (m.rackID == nil || *m.rackID != *p.RackID) {
		r := *p.RackID
		m.rackID = &r
		changed = true
	}
	if p.TopicNames != nil {
		ts := slices.Clone(p.TopicNames)
		slices.Sort(ts)
		ts = slices.Compact(ts)
		if !slices.Equal(ts, m.topics) {
			m.topics = ts
			changed = true
		}
	}
	if p.TopicRegex != nil && *p.TopicRegex != m.regex {
		m.regex, m.re = *p.TopicRegex, nil
		if m.regex != "" {
			m.re, _ = compileSubscription(m.regex)
		}
		changed = true
	}
	if p.ServerAssignor != nil && *p.ServerAssignor != m.assignor {
		m.assignor = *p.ServerAssignor
		changed = true
	}
	m.sessionDeadline = nowMs + g.deps.sessionTimeoutMs

	g.maybeBumpEpoch(view, changed)
	if g.groupEpoch > g.assignmentEpoch {
		g.computeTarget(view)
	}
	before := m.assigned.clone()
	g.reconcileMember(nowMs, m, p.Owned)
	g.updateState()

	r := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatIntervalMs: g.deps.heartbeatIntervalMs}
	// Kafka sends the assignment on a join, on a full request (the
	// member's state may be anything after an error) and when it changed.
	full := p.RebalanceTimeoutMs > 0 && (p.TopicNames != nil || p.TopicRegex != nil) && p.Owned != nil
	if p.MemberEpoch == joinEpoch || full || !before.equal(m.assigned) {
		r.Assignment = m.assigned.byTopic()
	}
	return r
}

// join finds or creates the member of a heartbeat with epoch 0. A member
// that rejoins under its id has lost its partitions: it starts over.
func (g *consumerGroup) join(p *ConsumerHeartbeat) (*consumerMember, bool, *ConsumerHeartbeatResult) {
	id := p.MemberID
	if id == "" {
		id = g.deps.newMemberID()
	}
	if p.InstanceID != nil {
		if oldID, ok := g.static[*p.InstanceID]; ok && oldID != id {
			old := g.members[oldID]
			if old.epoch != staticLeaveEpoch {
				r := hbError(ErrUnreleasedInstanceID, "Static member "+oldID+" with instance id "+*p.InstanceID+" is not released yet.")
				return nil, false, &r
			}
			if _, taken := g.members[id]; taken {
				r := hbError(ErrInvalidRequest, "Member id "+id+" is already in use.")
				return nil, false, &r
			}
			// The new instance takes over the old one's partitions and
			// target; its epoch starts over.
			g.replaceMember(old, id)
			m := g.members[id]
			g.releaseAll(m.revoking)
			m.revoking = partSet{}
			m.prevEpoch, m.epoch, m.state = 0, joinEpoch, memberStable
			m.rebalanceDeadline = noDeadline
			return m, false, nil
		}
	}
	if m := g.members[id]; m != nil {
		g.releaseAll(m.assigned)
		g.releaseAll(m.revoking)
		m.assigned, m.revoking = partSet{}, partSet{}
		m.classic, m.classicDeadline = nil, noDeadline
		m.prevEpoch, m.epoch, m.state = 0, joinEpoch, memberStable
		m.rebalanceDeadline = noDeadline
		return m, false, nil
	}
	if len(g.members) >= g.deps.maxSize {
		r := hbError(ErrGroupMaxSizeReached, "The consumer group has reached its maximum capacity.")
		return nil, false, &r
	}
	m := &consumerMember{
		id:                id,
		assigned:          partSet{},
		revoking:          partSet{},
		rebalanceDeadline: noDeadline,
		classicDeadline:   noDeadline,
	}
	if p.InstanceID != nil {
		inst := *p.InstanceID
		m.instanceID = &inst
		g.static[inst] = id
	}
	g.members[id] = m
	g.membership++
	return m, true, nil
}

// replaceMember re-keys a static member under a new id.
func (g *consumerGroup) replaceMember(old *consumerMember, newID string) {
	delete(g.members, old.id)
	if t, ok := g.target[old.id]; ok {
		delete(g.target, old.id)
		g.target[newID] = t
	}
	for tp := range old.assigned {
		g.owners[tp] = newID
	}
	for tp := range old.revoking {
		g.owners[tp] = newID
	}
	old.id = newID
	g.members[newID] = old
	g.membership++
	g.static[*old.instanceID] = newID
}

// checkEpoch is Kafka's throwIfMemberEpochIsInvalid: a member ahead of the
// coordinator or behind it is fenced, except one still at its previous
// epoch (its last answer was lost) that owns no more than its assignment.
func (m *consumerMember) checkEpoch(epoch int32, owned map[cluster.TopicID][]int32) error {
	switch {
	case epoch > m.epoch:
		return ErrFencedMemberEpoch
	case epoch < m.epoch:
		if epoch != m.prevEpoch || owned == nil {
			return ErrFencedMemberEpoch
		}
		for tp := range partSetOf(owned) {
			if !m.assigned.has(tp) {
				return ErrFencedMemberEpoch
			}
		}
	}
	return nil
}

// leave serves a heartbeat with epoch -1 (the member leaves) or -2 (a
// static member leaves for now, keeping its assignment for its session).
func (g *consumerGroup) leave(p *ConsumerHeartbeat) ConsumerHeartbeatResult {
	m := g.members[p.MemberID]
	if m == nil && p.InstanceID != nil {
		if id, ok := g.static[*p.InstanceID]; ok {
			m = g.members[id]
		}
	}
	if m == nil {
		return hbError(ErrUnknownMemberID, "Member "+p.MemberID+" is not a member of group "+g.id+".")
	}
	if p.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *p.InstanceID) {
		return hbError(ErrFencedInstanceID, "")
	}
	if p.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		m.prevEpoch, m.epoch = m.epoch, staticLeaveEpoch
		g.updateState()
		return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: staticLeaveEpoch}
	}
	g.removeMember(m)
	g.updateState()
	return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: leaveEpoch}
}

// removeMember drops a member and its partitions; the group epoch grows so
// the others get its partitions.
func (g *consumerGroup) removeMember(m *consumerMember) {
	g.releaseAll(m.assigned)
	g.releaseAll(m.revoking)
	delete(g.members, m.id)
	delete(g.target, m.id)
	g.membership++
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	g.groupEpoch++
}

func (g *consumerGroup) releaseAll(s partSet) {
	for tp := range s {
		delete(g.owners, tp)
	}
}

// subscriptionMeta describes every topic some member subscribes to: the
// group epoch must move when it changes.
func (g *consumerGroup) subscriptionMeta(view *TopicsView) string {
	var b strings.Builder
	for _, name := range view.names {
		for _, m := range g.members {
			if m.subscribes(name) {
				t := view.byName[name]
				b.WriteString(name)
				b.WriteByte(0)
				b.Write(t.ID[:])
				b.WriteByte(byte(t.Partitions >> 24))
				b.WriteByte(byte(t.Partitions >> 16))
				b.WriteByte(byte(t.Partitions >> 8))
				b.WriteByte(byte(t.Partitions))
				break
			}
		}
	}
	return b.String()
}

// maybeBumpEpoch grows the group epoch when a member changed or the
// subscribed topics' metadata did.
func (g *consumerGroup) maybeBumpEpoch(view *TopicsView, memberChanged bool) {
	if !memberChanged && view == g.subscribedView {
		return
	}
	meta := g.subscriptionMeta(view)
	g.subscribedView = view
	if memberChanged || meta != g.subscribed {
		g.subscribed = meta
		g.groupEpoch++
	}
}

// preferredAssignor is the assignor most members ask for, the default
// when none does; ties go to the earlier in Assignors.
func (g *consumerGroup) preferredAssignor() string {
	counts := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			counts[m.assignor]++
		}
	}
	best, n := Assignors[0], 0
	for _, a := range Assignors {
		if counts[a] > n {
			best, n = a, counts[a]
		}
	}
	return best
}

// computeTarget runs the assignor for the current group epoch.
func (g *consumerGroup) computeTarget(view *TopicsView) {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	specs := make([]assignMember, 0, len(ids))
	for _, id := range ids {
		m := g.members[id]
		var topics []TopicMeta
		for _, name := range view.names {
			if m.subscribes(name) {
				topics = append(topics, view.byName[name])
			}
		}
		specs = append(specs, assignMember{id: id, topics: topics, prev: g.target[id]})
	}
	g.assignorName = g.preferredAssignor()
	var target map[string]partSet
	if g.assignorName == AssignorRange {
		target = assignRange(specs)
	} else {
		target = assignUniform(specs)
	}
	g.target = target
	g.assignmentEpoch = g.groupEpoch
}

// reconcileMember moves a member one step towards its target (Kafka's
// CurrentAssignmentBuilder). owned is what the member reports owning, nil
// when unchanged.
func (g *consumerGroup) reconcileMember(nowMs int64, m *consumerMember, owned map[cluster.TopicID][]int32) {
	if m.epoch == staticLeaveEpoch {
		return
	}
	if m.state == memberUnrevoked {
		if owned == nil {
			return
		}
		for tp := range partSetOf(owned) {
			if m.revoking.has(tp) {
				return // not yet acknowledged
			}
		}
		g.releaseAll(m.revoking)
		m.revoking = partSet{}
		m.rebalanceDeadline = noDeadline
		m.state = memberStable
	}
	if m.state == memberStable && m.epoch == g.assignmentEpoch {
		return
	}
	target := g.target[m.id]
	keep, revoke := partSet{}, partSet{}
	for tp := range m.assigned {
		if target.has(tp) {
			keep[tp] = struct{}{}
		} else {
			revoke[tp] = struct{}{}
		}
	}
	if len(revoke) > 0 {
		m.assigned, m.revoking = keep, revoke
		m.state = memberUnrevoked
		m.rebalanceDeadline = nowMs + int64(m.rebalanceTimeoutMs)
		return
	}
	unreleased := false
	for tp := range target {
		if keep.has(tp) {
			continue
		}
		if owner, ok := g.owners[tp]; ok && owner != m.id {
			unreleased = true
			continue
		}
		keep[tp] = struct{}{}
		g.owners[tp] = m.id
	}
	m.assigned = keep
	if m.epoch != g.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.assignmentEpoch
	}
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
}

// updateState derives the group's state (Kafka's maybeUpdateGroupState).
func (g *consumerGroup) updateState() {
	switch {
	case g.state == ConsumerDead:
	case len(g.members) == 0:
		g.state = ConsumerEmpty
	case g.groupEpoch > g.assignmentEpoch:
		g.state = ConsumerAssigning
	default:
		g.state = ConsumerStable
		for _, m := range g.members {
			if m.epoch == staticLeaveEpoch {
				continue
			}
			if m.epoch != g.assignmentEpoch || m.state != memberStable {
				g.state = ConsumerReconciling
				break
			}
		}
	}
}

func (g *consumerGroup) nextDeadline() int64 {
	next := noDeadline
	for _, m := range g.members {
		for _, d := range []int64{m.sessionDeadline, m.rebalanceDeadline, m.classicDeadline} {
			if d != noDeadline && (next == noDeadline || d < next) {
				next = d
			}
		}
	}
	return next
}

// tick removes the members whose session or revocation expired (and
// classic members that did not rejoin or sync in time). It reports
// whether a consumer-protocol member was among them.
func (g *consumerGroup) tick(nowMs int64) (consumerLeft bool) {
	var expired []*consumerMember
	due := func(d int64) bool { return d != noDeadline && d <= nowMs }
	for _, m := range g.members {
		if m.sessionDeadline <= nowMs || due(m.rebalanceDeadline) || due(m.classicDeadline) {
			expired = append(expired, m)
		}
	}
	slices.SortFunc(expired, func(a, b *consumerMember) int { return cmp.Compare(a.id, b.id) })
	for _, m := range expired {
		g.removeMember(m)
		consumerLeft = consumerLeft || m.classic == nil
	}
	if len(expired) > 0 {
		g.updateState()
	}
	return consumerLeft
}

// validateOffsetCommit is Kafka's ConsumerGroup.validateOffsetCommit.
func (g *consumerGroup) validateOffsetCommit(memberID string, instanceID *string, epoch int32, txn bool, version int16) error {
	if epoch < 0 && len(g.members) == 0 {
		return nil
	}
	if txn && epoch < 0 && memberID == "" && instanceID == nil {
		// A producer committing for the group without its membership
		// (sendOffsetsToTransaction with only a group id).
		return nil
	}
	m := g.members[memberID]
	if m == nil {
		return ErrUnknownMemberID
	}
	if !txn && m.classic == nil && version < 9 {
		return ErrUnsupportedVersion
	}
	return m.checkCommitEpoch(epoch)
}

// checkCommitEpoch is Kafka's validateMemberEpoch: a classic member with
// the wrong generation gets ILLEGAL_GENERATION, which it knows, others
// STALE_MEMBER_EPOCH.
func (m *consumerMember) checkCommitEpoch(epoch int32) error {
	switch {
	case epoch == m.epoch:
		return nil
	case m.classic != nil:
		return ErrIllegalGeneration
	}
	return ErrStaleMemberEpoch
}

// validateOffsetFetch is Kafka's ConsumerGroup.validateOffsetFetch.
func (g *consumerGroup) validateOffsetFetch(memberID *string, epoch int32) error {
	if epoch < 0 && (memberID == nil || *memberID == "") {
		// An admin client or a consumer outside group management; an
		// empty id is taken as none.
		return nil
	}
	if memberID == nil {
		return ErrUnknownMemberID
	}
	m := g.members[*memberID]
	if m == nil {
		return ErrUnknownMemberID
	}
	return m.checkCommitEpoch(epoch)
}

// subscribedTopicNames lists the topics some member subscribes to by name
// or by regex against view.
func (g *consumerGroup) subscribedTopicNames(view *TopicsView) map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.topics {
			out[t] = true
		}
		if m.re != nil && view != nil {
			for _, name := range view.names {
				if m.re.MatchString(name) {
					out[name] = true
				}
			}
		}
	}
	return out
}

// ConsumerMemberDescription is one member as ConsumerGroupDescribe reports
// it.
type ConsumerMemberDescription struct {
	MemberID       string
	InstanceID     *string
	RackID         *string
	MemberEpoch    int32
	ClientID       string
	ClientHost     string
	TopicNames     []string
	TopicRegex     *string
	Assignment     map[cluster.TopicID][]int32
	TargetAssigned map[cluster.TopicID][]int32
	// Classic is set for a member using the classic protocol.
	Classic bool
}

// ConsumerGroupDescription is a group as ConsumerGroupDescribe reports it.
type ConsumerGroupDescription struct {
	State           ConsumerState
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

func (g *consumerGroup) describe() ConsumerGroupDescription {
	d := ConsumerGroupDescription{State: g.state, Epoch: g.groupEpoch, AssignmentEpoch: g.assignmentEpoch, AssignorName: g.assignorName}
	if d.AssignorName == "" {
		d.AssignorName = g.preferredAssignor()
	}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.members[id]
		md := ConsumerMemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, TopicNames: slices.Clone(m.topics),
			Assignment: m.assigned.byTopic(), TargetAssigned: g.target[id].byTopic(),
			Classic: m.classic != nil,
		}
		if md.TopicNames == nil {
			md.TopicNames = []string{}
		}
		if m.regex != "" {
			r := m.regex
			md.TopicRegex = &r
		}
		d.Members = append(d.Members, md)
	}
	return d
}

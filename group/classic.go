package group

// The classic group protocol's state machine, after Kafka's GroupCoordinator
// and GroupMetadata (3.x). It does no I/O, starts no goroutines and never
// reads a clock: every method takes the time in milliseconds, and the
// coordinator calls tick when nextDeadline passes. Parked JoinGroup and
// SyncGroup requests are callbacks stored on their member and invoked
// exactly once when the group's state decides their answer. Persistence is
// the store hook: it receives the group record to append and a completion
// the caller runs (with the group lock held again) once the append is
// acknowledged or has failed.
//
// States and transitions (Kafka's GroupState):
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                    ▲  │ (no members left)                    │ leader's SyncGroup stored
//	  └────────────────────┼──┘                                      ▼
//	                       └──────── member change / expiry ──────── Stable
//	any ──unload / delete / expire──▶ Dead
//
// The timers, each a deadline that tick acts on:
//   - per member, the session: a member that neither heartbeats nor waits in
//     a JoinGroup/SyncGroup for session.timeout.ms is removed (a new member
//     waiting in its first JoinGroup gets newMemberJoinTimeoutMs instead,
//     since a client that gave up would otherwise leave a ghost behind);
//   - per pending member (KIP-394), the session: a member id handed out
//     with MEMBER_ID_REQUIRED that never joins is forgotten;
//   - the join: the rebalance completes when every member has rejoined or
//     the largest rebalance.timeout.ms passes (members that did not rejoin
//     are removed); an empty group's first rebalance instead waits
//     group.initial.rebalance.delay.ms, extended while new members arrive,
//     up to the rebalance timeout;
//   - the sync: members that do not send SyncGroup within the rebalance
//     timeout after the join completed are removed and the group
//     rebalances again.

import (
	"sort"
)

// State is a classic group's state; String gives Kafka's names, which
// ListGroups and DescribeGroups report.
type State int8

const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	}
	return "Unknown"
}

// newMemberJoinTimeoutMs bounds how long a new member's first JoinGroup may
// stay parked (Kafka's GroupCoordinator.NewMemberJoinTimeoutMs).
const newMemberJoinTimeoutMs = 5 * 60 * 1000

// noDeadline marks an unset deadline.
const noDeadline = int64(-1)

// Protocol is one assignment protocol a member supports, with its
// protocol-specific metadata (for consumers, the subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinParams is a JoinGroup request in the coordinator's terms.
type JoinParams struct {
	MemberID           string
	InstanceID         *string
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	SessionTimeoutMs   int32
	ProtocolType       string
	Protocols          []Protocol
	// RequireKnownMemberID is set from JoinGroup v4 on (KIP-394).
	RequireKnownMemberID bool
	// SupportSkipAssignment is set from JoinGroup v9 on (KIP-814).
	SupportSkipAssignment bool
}

// JoinMember is one member as the leader's JoinGroup answer lists it.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   *string
	ProtocolName   *string
	LeaderID       string
	SkipAssignment bool
	Members        []JoinMember
}

func joinError(memberID string, err error) JoinResult {
	return JoinResult{Err: err, MemberID: memberID, Generation: -1}
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          error
	ProtocolType *string
	ProtocolName *string
	Assignment   []byte
}

// LeaveMember names one member leaving (LeaveGroup v3+ batches them).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

type member struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []Protocol
	assignment         []byte

	// joinReply is set while the member waits in JoinGroup, syncReply
	// while it waits in SyncGroup.
	joinReply func(JoinResult)
	syncReply func(SyncResult)
	// isNew is set from the member's first JoinGroup until that join
	// completes.
	isNew bool
	// deadline is when the session expires; noDeadline while the member
	// waits in a JoinGroup or SyncGroup (the rebalance timers cover it).
	deadline int64
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols equal the member's, in order.
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || string(p.Metadata) != string(m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// groupDeps is what a group needs from its coordinator.
type groupDeps struct {
	initialRebalanceDelayMs int64
	maxSize                 int
	// newMemberID returns a fresh member id starting with prefix.
	newMemberID func(prefix string) string
	// store persists the group's record; done runs with the group lock
	// held once the append is acknowledged (err nil) or failed.
	store func(g *classicGroup, v *groupValue, done func(err error, nowMs int64))
}

// classicGroup is one group: its membership state and committed offsets.
// It is guarded by its coordinator's per-group lock.
type classicGroup struct {
	id   string
	deps *groupDeps

	state          State
	stateTimestamp int64
	// protocolType is set by the first member and kept while the group
	// has offsets or members; nil for a group that only commits offsets.
	protocolType *string
	protocolName *string
	generation   int32
	leader       string
	// members in join order; order keeps leader succession and protocol
	// votes deterministic.
	members map[string]*member
	order   []string
	// static maps group.instance.id to the current member id (KIP-345).
	static map[string]string
	// pending holds member ids handed out with MEMBER_ID_REQUIRED and
	// their expiry (KIP-394).
	pending map[string]int64
	// pendingSync holds the members that have not sent SyncGroup since the
	// last join completed; syncDeadline is when they are removed.
	pendingSync  map[string]bool
	syncDeadline int64

	// The join timer, active while PreparingRebalance.
	join struct {
		active      bool
		initial     bool
		deadline    int64
		remainingMs int64
	}
	newMemberAdded bool

	offsets map[TopicPartition]OffsetAndMetadata
	// pendingCommits counts commits of a partition not yet acknowledged:
	// their offsets must not expire underneath them.
	pendingCommits map[TopicPartition]int
	// txnOffsets holds offsets committed inside transactions, by producer
	// id, until the transaction's marker decides them (KIP-98): a commit
	// moves them to offsets, an abort drops them.
	txnOffsets map[int64]map[TopicPartition]OffsetAndMetadata
}

func newClassicGroup(id string, deps *groupDeps, nowMs int64) *classicGroup {
	return &classicGroup{
		id:             id,
		deps:           deps,
		state:          StateEmpty,
		stateTimestamp: nowMs,
		members:        make(map[string]*member),
		static:         make(map[string]string),
		pending:        make(map[string]int64),
		pendingSync:    make(map[string]bool),
		syncDeadline:   noDeadline,
		offsets:        make(map[TopicPartition]OffsetAndMetadata),
		pendingCommits: make(map[TopicPartition]int),
		txnOffsets:     make(map[int64]map[TopicPartition]OffsetAndMetadata),
	}
}

func (g *classicGroup) transition(s State, nowMs int64) {
	g.state = s
	g.stateTimestamp = nowMs
}

func (g *classicGroup) has(id string) bool { _, ok := g.members[id]; return ok }

func (g *classicGroup) isLeader(id string) bool { return g.leader != "" && g.leader == id }

func (g *classicGroup) size() int { return len(g.members) }

func (g *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.joinReply != nil {
			n++
		}
	}
	return n
}

func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin() && len(g.pending) == 0
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *classicGroup) rebalanceTimeoutMs() int64 {
	var t int64
	for _, m := range g.members {
		t = max(t, int64(m.rebalanceTimeoutMs))
	}
	return t
}

func (g *classicGroup) canRebalance() bool {
	return g.state == StateStable || g.state == StateCompletingRebalance || g.state == StateEmpty
}

// candidateProtocols are the protocols every member supports.
func (g *classicGroup) candidateProtocols() map[string]bool {
	counts := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			counts[p.Name]++
		}
	}
	out := make(map[string]bool)
	for name, n := range counts {
		if n == len(g.members) {
			out[name] = true
		}
	}
	return out
}

// supportsProtocols is Kafka's check for a joining member: an empty group
// takes any non-empty protocol type and list; otherwise the type must match
// and at least one protocol must be supported by every current member.
func (g *classicGroup) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.state == StateEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	cands := g.candidateProtocols()
	for _, p := range protocols {
		if cands[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol for the next generation: among those
// all members support, each member votes for the first of its own
// preference list, and the most votes win. Ties go to the protocol that
// appears first in the longest-standing member's list, so the choice is
// deterministic.
func (g *classicGroup) selectProtocol() string {
	cands := g.candidateProtocols()
	votes := make(map[string]int)
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if cands[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if v, ok := votes[p.Name]; ok && v > bestVotes {
				best, bestVotes = p.Name, v
			}
		}
	}
	return best
}

func (g *classicGroup) add(m *member, reply func(JoinResult)) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	m.joinReply = reply
	delete(g.pending, m.id)
}

func (g *classicGroup) remove(id string) {
	if m, ok := g.members[id]; ok {
		delete(g.members, id)
		for i, o := range g.order {
			if o == id {
				g.order = append(g.order[:i:i], g.order[i+1:]...)
				break
			}
		}
		if m.instanceID != nil && g.static[*m.instanceID] == id {
			delete(g.static, *m.instanceID)
		}
	}
	if g.isLeader(id) {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
}

func (g *classicGroup) invokeJoin(m *member, r JoinResult) bool {
	if m.joinReply == nil {
		return false
	}
	reply := m.joinReply
	m.joinReply = nil
	reply(r)
	return true
}

func (g *classicGroup) invokeSync(m *member, r SyncResult) bool {
	if m.syncReply == nil {
		return false
	}
	reply := m.syncReply
	m.syncReply = nil
	reply(r)
	return true
}

// scheduleSession restarts a member's session timer.
func (g *classicGroup) scheduleSession(m *member, nowMs, timeoutMs int64) {
	m.deadline = nowMs + timeoutMs
}

// validateMember checks that instanceID (if set) maps to memberID and that
// memberID is a member.
func (g *classicGroup) validateMember(memberID string, instanceID *string) error {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		if !ok {
			return ErrUnknownMemberID
		}
		if cur != memberID {
			return ErrFencedInstanceID
		}
	}
	if !g.has(memberID) {
		return ErrUnknownMemberID
	}
	return nil
}

func (g *classicGroup) acceptJoiningMember(memberID string) bool {
	switch g.state {
	case StatePreparingRebalance:
		if m, ok := g.members[memberID]; ok && m.joinReply != nil {
			return true
		}
		return g.numAwaitingJoin() < g.deps.maxSize
	case StateCompletingRebalance, StateStable:
		return g.has(memberID) || g.size() < g.deps.maxSize
	}
	return true
}

// joinGroup handles a JoinGroup whose session timeout the coordinator has
// already checked. reply is called exactly once, possibly before joinGroup
// returns.
func (g *classicGroup) joinGroup(nowMs int64, p JoinParams, reply func(JoinResult)) {
	unknown := p.MemberID == ""
	switch {
	case !g.acceptJoiningMember(p.MemberID):
		g.remove(p.MemberID)
		reply(joinError("", ErrGroupMaxSizeReached))
	case unknown:
		g.joinNewMember(nowMs, p, reply)
	default:
		g.joinCurrentMember(nowMs, p, reply)
	}
	if g.state == StatePreparingRebalance {
		g.tryCompleteJoin(nowMs)
	}
}

func (g *classicGroup) joinNewMember(nowMs int64, p JoinParams, reply func(JoinResult)) {
	if g.state == StateDead {
		reply(joinError("", ErrCoordinatorNotAvailable))
		return
	}
	if !g.supportsProtocols(p.ProtocolType, p.Protocols) {
		reply(joinError("", ErrInconsistentProtocol))
		return
	}
	if p.InstanceID != nil {
		newID := g.deps.newMemberID(*p.InstanceID)
		if old, ok := g.static[*p.InstanceID]; ok {
			g.updateStaticMember(nowMs, old, newID, p, reply)
			return
		}
		g.addMemberAndRebalance(nowMs, newID, p, reply)
		return
	}
	newID := g.deps.newMemberID(p.ClientID)
	if p.RequireKnownMemberID {
		g.pending[newID] = nowMs + int64(p.SessionTimeoutMs)
		reply(joinError(newID, ErrMemberIDRequired))
		return
	}
	g.addMemberAndRebalance(nowMs, newID, p, reply)
}

func (g *classicGroup) joinCurrentMember(nowMs int64, p JoinParams, reply func(JoinResult)) {
	if g.state == StateDead {
		reply(joinError(p.MemberID, ErrCoordinatorNotAvailable))
		return
	}
	if !g.supportsProtocols(p.ProtocolType, p.Protocols) {
		reply(joinError(p.MemberID, ErrInconsistentProtocol))
		return
	}
	if _, ok := g.pending[p.MemberID]; ok {
		// A pending member is never static: the id was handed out to a
		// dynamic member's first JoinGroup.
		g.addMemberAndRebalance(nowMs, p.MemberID, p, reply)
		return
	}
	if err := g.validateMember(p.MemberID, p.InstanceID); err != nil {
		reply(joinError(p.MemberID, err))
		return
	}
	m := g.members[p.MemberID]
	switch g.state {
	case StatePreparingRebalance:
		g.updateMemberAndRebalance(nowMs, m, p, reply)
	case StateCompletingRebalance:
		if m.matches(p.Protocols) {
			// The member lost its JoinGroup answer; repeat it.
			reply(g.joinResultFor(m, false))
		} else {
			g.updateMemberAndRebalance(nowMs, m, p, reply)
		}
	case StateStable:
		if g.isLeader(m.id) || !m.matches(p.Protocols) {
			// A leader's rejoin lets it trigger a rebalance for changes
			// its metadata does not show (new partitions of a topic).
			g.updateMemberAndRebalance(nowMs, m, p, reply)
		} else {
			reply(JoinResult{
				MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
				ProtocolName: g.protocolName, LeaderID: g.leader,
			})
		}
	default:
		reply(joinError(p.MemberID, ErrUnknownMemberID))
	}
}

func (g *classicGroup) joinResultFor(m *member, skip bool) JoinResult {
	r := JoinResult{
		MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
		ProtocolName: g.protocolName, LeaderID: g.leader, SkipAssignment: skip,
	}
	if g.isLeader(m.id) {
		r.Members = g.currentMembers()
	}
	return r
}

func (g *classicGroup) currentMembers() []JoinMember {
	var proto string
	if g.protocolName != nil {
		proto = *g.protocolName
	}
	out := make([]JoinMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		out = append(out, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(proto)})
	}
	return out
}

func (g *classicGroup) addMemberAndRebalance(nowMs int64, id string, p JoinParams, reply func(JoinResult)) {
	m := &member{
		id: id, instanceID: p.InstanceID, clientID: p.ClientID, clientHost: p.ClientHost,
		rebalanceTimeoutMs: p.RebalanceTimeoutMs, sessionTimeoutMs: p.SessionTimeoutMs,
		protocolType: p.ProtocolType, protocols: p.Protocols, isNew: true,
	}
	if g.state == StatePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, reply)
	// A new member cannot heartbeat before it has its id, and a client
	// that timed out its JoinGroup simply retries with a fresh one; this
	// bound removes the abandoned attempts.
	g.scheduleSession(m, nowMs, newMemberJoinTimeoutMs)
	g.maybePrepareRebalance(nowMs)
}

func (g *classicGroup) updateMember(m *member, protocols []Protocol, rebalanceTimeoutMs, sessionTimeoutMs int32, reply func(JoinResult)) {
	m.protocols = protocols
	m.rebalanceTimeoutMs = rebalanceTimeoutMs
	m.sessionTimeoutMs = sessionTimeoutMs
	if m.joinReply != nil && reply != nil {
		// The same member joined again (from another connection) while
		// its earlier JoinGroup was parked; the newer one takes its place.
		g.invokeJoin(m, joinError(m.id, ErrRebalanceInProgress))
	}
	m.joinReply = reply
}

func (g *classicGroup) updateMemberAndRebalance(nowMs int64, m *member, p JoinParams, reply func(JoinResult)) {
	g.updateMember(m, p.Protocols, p.RebalanceTimeoutMs, p.SessionTimeoutMs, reply)
	g.maybePrepareRebalance(nowMs)
}

// replaceStaticMember moves a static member to a new member id; whatever
// the old id was waiting for is answered FENCED_INSTANCE_ID.
func (g *classicGroup) replaceStaticMember(instanceID, oldID, newID string) *member {
	m := g.members[oldID]
	delete(g.members, oldID)
	g.invokeJoin(m, joinError(oldID, ErrFencedInstanceID))
	g.invokeSync(m, SyncResult{Err: ErrFencedInstanceID})
	m.id = newID
	g.members[newID] = m
	for i, o := range g.order {
		if o == oldID {
			g.order[i] = newID
		}
	}
	if g.isLeader(oldID) {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.static[instanceID] = newID
	return m
}

// updateStaticMember handles a known group.instance.id joining with no
// member id: the restarted instance takes over the old member's place. In
// Stable, if the protocol the group would select is unchanged, the group
// keeps its assignment and generation (no rebalance) once the new member id
// is stored; the old member id is fenced.
func (g *classicGroup) updateStaticMember(nowMs int64, oldID, newID string, p JoinParams, reply func(JoinResult)) {
	instanceID := *p.InstanceID
	currentLeader := g.leader
	m := g.replaceStaticMember(instanceID, oldID, newID)
	g.scheduleSession(m, nowMs, int64(p.SessionTimeoutMs))
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs
	g.updateMember(m, p.Protocols, p.RebalanceTimeoutMs, p.SessionTimeoutMs, reply)

	switch g.state {
	case StateStable:
		if g.protocolName == nil || *g.protocolName != g.selectProtocol() {
			g.maybePrepareRebalance(nowMs)
			return
		}
		gen := g.generation
		g.deps.store(g, g.value(nil), func(err error, nowMs int64) {
			if err != nil {
				// Put the old member id back: the log still names it.
				r := m.joinReply
				m.joinReply = nil
				g.updateMember(m, oldProtocols, oldRebalance, oldSession, nil)
				old := g.replaceStaticMember(instanceID, newID, oldID)
				g.scheduleSession(old, nowMs, int64(old.sessionTimeoutMs))
				if r != nil {
					res := joinError("", err)
					res.Generation, res.ProtocolType, res.ProtocolName, res.LeaderID = gen, g.protocolType, g.protocolName, currentLeader
					r(res)
				}
				return
			}
			if p.SupportSkipAssignment {
				// KIP-814: a static leader learns it leads, so it keeps
				// watching metadata, but must not run the assignor.
				g.invokeJoin(m, g.joinResultFor(m, g.isLeader(m.id)))
				return
			}
			// Older clients would run a pointless assignment if told they
			// lead; the old leader id keeps them from it.
			g.invokeJoin(m, JoinResult{
				MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
				ProtocolName: g.protocolName, LeaderID: currentLeader,
			})
		})
	case StateCompletingRebalance:
		// The leader may already be assigning to the old member id; only
		// a new rebalance gives the new id an assignment.
		g.prepareRebalance(nowMs)
	case StatePreparingRebalance:
		// The member is now waiting in the join like the others.
	}
}

func (g *classicGroup) maybePrepareRebalance(nowMs int64) {
	if g.canRebalance() {
		g.prepareRebalance(nowMs)
	}
}

func (g *classicGroup) prepareRebalance(nowMs int64) {
	if g.state == StateCompletingRebalance {
		g.resetAndPropagateAssignmentError(nowMs, ErrRebalanceInProgress)
	}
	clear(g.pendingSync)
	g.syncDeadline = noDeadline
	g.join.active = true
	if g.state == StateEmpty {
		delay := g.deps.initialRebalanceDelayMs
		g.join.initial = true
		g.join.deadline = nowMs + delay
		g.join.remainingMs = max(g.rebalanceTimeoutMs()-delay, 0)
	} else {
		g.join.initial = false
		g.join.deadline = nowMs + g.rebalanceTimeoutMs()
	}
	g.transition(StatePreparingRebalance, nowMs)
	g.tryCompleteJoin(nowMs)
}

// tryCompleteJoin completes the join once every member has rejoined. The
// initial delay is never cut short: its point is to wait for members that
// have not asked to join yet.
func (g *classicGroup) tryCompleteJoin(nowMs int64) {
	if g.state == StatePreparingRebalance && g.join.active && !g.join.initial && g.hasAllMembersJoined() {
		g.completeJoin(nowMs)
	}
}

func (g *classicGroup) completeJoin(nowMs int64) {
	g.join.active = false
	for _, id := range append([]string(nil), g.order...) {
		m := g.members[id]
		if m.joinReply == nil && m.instanceID == nil {
			g.remove(id)
		}
	}
	if g.state == StateDead {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		// Nobody rejoined (only static members, who are kept): wait
		// another round for their sessions to expire.
		g.join.active, g.join.initial = true, false
		g.join.deadline = nowMs + g.rebalanceTimeoutMs()
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolName = nil
		g.transition(StateEmpty, nowMs)
		// A failure here is harmless: the previous generation in the log
		// has members whose sessions simply expire after a reload.
		g.deps.store(g, g.value(nil), func(error, int64) {})
		return
	}
	proto := g.selectProtocol()
	g.protocolName = &proto
	g.transition(StateCompletingRebalance, nowMs)
	for _, id := range g.order {
		m := g.members[id]
		g.invokeJoin(m, g.joinResultFor(m, false))
		g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
		m.isNew = false
		g.pendingSync[id] = true
	}
	g.syncDeadline = nowMs + g.rebalanceTimeoutMs()
}

func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].joinReply != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].joinReply != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// syncGroup handles a SyncGroup. reply is called exactly once.
func (g *classicGroup) syncGroup(nowMs int64, memberID string, instanceID *string, generation int32, protocolType, protocolName *string, assignments map[string][]byte, reply func(SyncResult)) {
	if g.state == StateDead {
		reply(SyncResult{Err: ErrCoordinatorNotAvailable})
		return
	}
	if err := g.validateMember(memberID, instanceID); err != nil {
		reply(SyncResult{Err: err})
		return
	}
	switch {
	case generation != g.generation:
		reply(SyncResult{Err: ErrIllegalGeneration})
		return
	case protocolType != nil && (g.protocolType == nil || *g.protocolType != *protocolType),
		protocolName != nil && (g.protocolName == nil || *g.protocolName != *protocolName):
		reply(SyncResult{Err: ErrInconsistentProtocol})
		return
	}
	m := g.members[memberID]
	switch g.state {
	case StateEmpty:
		reply(SyncResult{Err: ErrUnknownMemberID})
	case StatePreparingRebalance:
		reply(SyncResult{Err: ErrRebalanceInProgress})
	case StateCompletingRebalance:
		m.syncReply = reply
		g.removePendingSync(memberID)
		if !g.isLeader(memberID) {
			return
		}
		assignment := make(map[string][]byte, len(g.members))
		for id := range g.members {
			assignment[id] = assignments[id]
		}
		gen := g.generation
		g.deps.store(g, g.value(assignment), func(err error, nowMs int64) {
			// Another member may have joined while the record was written;
			// only the generation it belongs to may become stable.
			if g.state != StateCompletingRebalance || g.generation != gen {
				return
			}
			if err != nil {
				g.resetAndPropagateAssignmentError(nowMs, err)
				g.maybePrepareRebalance(nowMs)
				return
			}
			for id, mm := range g.members {
				mm.assignment = assignment[id]
			}
			g.propagateAssignment(nowMs, nil)
			g.transition(StateStable, nowMs)
		})
	case StateStable:
		g.removePendingSync(memberID)
		reply(SyncResult{ProtocolType: g.protocolType, ProtocolName: g.protocolName, Assignment: m.assignment})
		g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
	}
}

func (g *classicGroup) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = noDeadline
	}
}

func (g *classicGroup) resetAndPropagateAssignmentError(nowMs int64, err error) {
	for _, m := range g.members {
		m.assignment = nil
	}
	g.propagateAssignment(nowMs, err)
}

func (g *classicGroup) propagateAssignment(nowMs int64, err error) {
	for _, id := range g.order {
		m := g.members[id]
		r := SyncResult{Err: err, Assignment: m.assignment}
		if err == nil {
			r.ProtocolType, r.ProtocolName = g.protocolType, g.protocolName
		}
		if g.invokeSync(m, r) {
			// The session restarts with the answer: a member whose session
			// ran out while it waited for the leader must not be expired.
			g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
		}
	}
}

// heartbeat handles a Heartbeat.
func (g *classicGroup) heartbeat(nowMs int64, memberID string, instanceID *string, generation int32) error {
	if g.state == StateDead {
		return ErrCoordinatorNotAvailable
	}
	if err := g.validateMember(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return ErrIllegalGeneration
	}
	m := g.members[memberID]
	switch g.state {
	case StateEmpty:
		return ErrUnknownMemberID
	case StatePreparingRebalance:
		g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
		return ErrRebalanceInProgress
	default:
		// CompletingRebalance counts too: consumers may heartbeat between
		// their JoinGroup answer and their SyncGroup.
		g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
		return nil
	}
}

// leaveGroup removes members; the result holds one error per member.
func (g *classicGroup) leaveGroup(nowMs int64, leaving []LeaveMember) []error {
	errs := make([]error, len(leaving))
	for i, l := range leaving {
		switch {
		case l.MemberID == "":
			// Administrative removal by group.instance.id.
			if l.InstanceID == nil {
				errs[i] = ErrUnknownMemberID
			} else if cur, ok := g.static[*l.InstanceID]; ok {
				g.removeMemberAndUpdate(nowMs, g.members[cur])
			} else {
				errs[i] = ErrUnknownMemberID
			}
		case g.isPending(l.MemberID):
			g.remove(l.MemberID)
			g.tryCompleteJoin(nowMs)
		default:
			if err := g.validateMember(l.MemberID, l.InstanceID); err != nil {
				errs[i] = err
				continue
			}
			g.removeMemberAndUpdate(nowMs, g.members[l.MemberID])
		}
	}
	return errs
}

func (g *classicGroup) isPending(id string) bool { _, ok := g.pending[id]; return ok }

func (g *classicGroup) removeMemberAndUpdate(nowMs int64, m *member) {
	// A new member's JoinGroup may still be parked; UNKNOWN_MEMBER_ID makes
	// a live client join again.
	g.invokeJoin(m, joinError("", ErrUnknownMemberID))
	g.invokeSync(m, SyncResult{Err: ErrUnknownMemberID})
	g.remove(m.id)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		g.maybePrepareRebalance(nowMs)
	case StatePreparingRebalance:
		g.tryCompleteJoin(nowMs)
	}
}

// nextDeadline is the earliest time tick has work, noDeadline if none.
func (g *classicGroup) nextDeadline() int64 {
	if g.state == StateDead {
		return noDeadline
	}
	next := noDeadline
	at := func(t int64) {
		if t != noDeadline && (next == noDeadline || t < next) {
			next = t
		}
	}
	for _, t := range g.pending {
		at(t)
	}
	for _, m := range g.members {
		at(m.deadline)
	}
	at(g.syncDeadline)
	if g.join.active {
		at(g.join.deadline)
	}
	return next
}

// tick runs every timer that is due at nowMs.
func (g *classicGroup) tick(nowMs int64) {
	// Expiries can make new deadlines due at once (a zero initial delay);
	// the bound only guards against a bug looping forever.
	for range 64 {
		if !g.tickOnce(nowMs) {
			return
		}
	}
}

func (g *classicGroup) tickOnce(nowMs int64) bool {
	if g.state == StateDead {
		return false
	}
	for _, id := range sortedKeys(g.pending) {
		if g.pending[id] <= nowMs {
			g.remove(id)
			g.tryCompleteJoin(nowMs)
			return true
		}
	}
	for _, id := range g.order {
		m := g.members[id]
		if m.deadline == noDeadline || m.deadline > nowMs {
			continue
		}
		if !m.isNew && (m.joinReply != nil || m.syncReply != nil) {
			// Waiting in a rebalance satisfies the session; the session
			// restarts when the wait is answered.
			m.deadline = noDeadline
			return true
		}
		g.removeMemberAndUpdate(nowMs, m)
		return true
	}
	if g.syncDeadline != noDeadline && g.syncDeadline <= nowMs {
		g.syncDeadline = noDeadline
		if (g.state == StateCompletingRebalance || g.state == StateStable) && len(g.pendingSync) > 0 {
			for _, id := range sortedKeys(g.pendingSync) {
				g.remove(id)
			}
			g.prepareRebalance(nowMs)
		}
		return true
	}
	if g.join.active && g.join.deadline <= nowMs {
		if g.join.initial && g.newMemberAdded && g.join.remainingMs != 0 {
			g.newMemberAdded = false
			delay := min(g.deps.initialRebalanceDelayMs, g.join.remainingMs)
			g.join.remainingMs = max(g.join.remainingMs-delay, 0)
			g.join.deadline = nowMs + delay
			return true
		}
		g.completeJoin(nowMs)
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// value is the group's record; assignment, when set, replaces the
// members' current assignments (the leader's SyncGroup being stored).
func (g *classicGroup) value(assignment map[string][]byte) *groupValue {
	v := &groupValue{Generation: g.generation, Protocol: g.protocolName, CurrentStateTimestamp: g.stateTimestamp}
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	var proto string
	if g.protocolName != nil {
		proto = *g.protocolName
	}
	for _, id := range g.order {
		m := g.members[id]
		a := m.assignment
		if assignment != nil {
			a = assignment[id]
		}
		v.Members = append(v.Members, memberValue{
			MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeoutMs: m.rebalanceTimeoutMs, SessionTimeoutMs: m.sessionTimeoutMs,
			Subscription: m.metadataFor(proto), Assignment: a,
		})
	}
	return v
}

// loadedGroup rebuilds a group from its last record, as Kafka does on
// load: Empty without members, else Stable with every member's session
// started now.
func loadedGroup(id string, deps *groupDeps, v *groupValue, nowMs int64) *classicGroup {
	g := newClassicGroup(id, deps, nowMs)
	if v == nil {
		return g
	}
	g.generation = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName = v.Protocol
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.CurrentStateTimestamp >= 0 {
		g.stateTimestamp = v.CurrentStateTimestamp
	}
	for _, mv := range v.Members {
		m := &member{
			id: mv.MemberID, instanceID: mv.InstanceID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			rebalanceTimeoutMs: mv.RebalanceTimeoutMs, sessionTimeoutMs: mv.SessionTimeoutMs,
			protocolType: v.ProtocolType, assignment: mv.Assignment,
		}
		if v.Protocol != nil {
			m.protocols = []Protocol{{Name: *v.Protocol, Metadata: mv.Subscription}}
		}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		g.scheduleSession(m, nowMs, int64(m.sessionTimeoutMs))
	}
	if len(g.members) > 0 {
		g.state = StateStable
		if !g.has(g.leader) {
			g.leader = g.order[0]
		}
	} else {
		g.leader = ""
	}
	if g.size() > deps.maxSize {
		// Over capacity after a lowered group.max.size: rebalance so the
		// members can commit and the last ones to rejoin are turned away.
		g.prepareRebalance(nowMs)
	}
	return g
}

// unload marks the group Dead and answers everything parked on it.
func (g *classicGroup) unload(err error) {
	prev := g.state
	g.state = StateDead
	g.join.active = false
	g.syncDeadline = noDeadline
	for _, id := range g.order {
		m := g.members[id]
		switch prev {
		case StatePreparingRebalance:
			g.invokeJoin(m, joinError(m.id, err))
		case StateStable, StateCompletingRebalance:
			g.invokeSync(m, SyncResult{Err: err})
		}
		// Anything else parked (a join superseded by the state change)
		// must not be left waiting either.
		g.invokeJoin(m, joinError(m.id, err))
		g.invokeSync(m, SyncResult{Err: err})
	}
}

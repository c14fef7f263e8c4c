package group

import (
	"errors"
	"fmt"
	"testing"
)

// Tests of the classic group state machine. Time is the harness's own
// millisecond counter; the harness runs tick after every request, as the
// coordinator's timer does for a deadline that is already due, and stores
// only complete when a test says so, which is how it checks that nothing is
// acknowledged before it is written.

type harness struct {
	t      *testing.T
	g      *classicGroup
	now    int64
	ids    int
	stores []pendingStore
}

type pendingStore struct {
	v    *groupValue
	done func(error, int64)
}

func newHarness(t *testing.T, initialDelayMs int64) *harness {
	h := &harness{t: t, now: 1_000_000}
	deps := &groupDeps{
		initialRebalanceDelayMs: initialDelayMs,
		maxSize:                 1000,
		newMemberID: func(prefix string) string {
			h.ids++
			return fmt.Sprintf("%s-%d", prefix, h.ids)
		},
		store: func(_ *classicGroup, v *groupValue, done func(error, int64)) {
			h.stores = append(h.stores, pendingStore{v, done})
		},
	}
	h.g = newClassicGroup("g", deps, h.now)
	return h
}

// completeStores acknowledges (or fails) every queued write.
func (h *harness) completeStores(err error) {
	for len(h.stores) > 0 {
		s := h.stores[0]
		h.stores = h.stores[1:]
		s.done(err, h.now)
	}
}

func (h *harness) advance(ms int64) {
	h.now += ms
	h.g.tick(h.now)
}

type joinCall struct {
	res  JoinResult
	done bool
}

func consumerJoin(memberID, clientID string, protocols ...string) JoinParams {
	p := JoinParams{
		MemberID: memberID, ClientID: clientID, ClientHost: "/127.0.0.1",
		RebalanceTimeoutMs: 60000, SessionTimeoutMs: 10000, ProtocolType: "consumer",
	}
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, name := range protocols {
		p.Protocols = append(p.Protocols, Protocol{Name: name, Metadata: []byte(clientID + "/" + name)})
	}
	return p
}

func (h *harness) join(p JoinParams) *joinCall {
	c := &joinCall{}
	h.g.joinGroup(h.now, p, func(r JoinResult) {
		if c.done {
			h.t.Fatalf("join of %q answered twice", p.MemberID)
		}
		c.res, c.done = r, true
	})
	h.g.tick(h.now)
	return c
}

type syncCall struct {
	res  SyncResult
	done bool
}

func (h *harness) sync(memberID string, generation int32, assignments map[string][]byte) *syncCall {
	c := &syncCall{}
	h.g.syncGroup(h.now, memberID, nil, generation, nil, nil, assignments, func(r SyncResult) {
		if c.done {
			h.t.Fatalf("sync of %q answered twice", memberID)
		}
		c.res, c.done = r, true
	})
	h.g.tick(h.now)
	return c
}

// joinNew joins a new dynamic member the KIP-394 way and returns the
// parked or answered second join.
func (h *harness) joinNew(clientID string, protocols ...string) *joinCall {
	h.t.Helper()
	p := consumerJoin("", clientID, protocols...)
	p.RequireKnownMemberID = true
	first := h.join(p)
	if !first.done || !errors.Is(first.res.Err, ErrMemberIDRequired) || first.res.MemberID == "" {
		h.t.Fatalf("first join of %s: %+v, want MEMBER_ID_REQUIRED with a member id", clientID, first.res)
	}
	p.MemberID = first.res.MemberID
	return h.join(p)
}

// stableGroup brings n members (c0..cn-1) to a stable generation and
// returns their member ids, leader first.
func (h *harness) stableGroup(n int) []string {
	h.t.Helper()
	var calls []*joinCall
	for i := range n {
		calls = append(calls, h.joinNew(fmt.Sprintf("c%d", i)))
	}
	// With no initial delay the first member's join completes alone;
	// later members trigger another rebalance the earlier ones must join.
	for round := 0; round < 2*n; round++ {
		allDone := true
		for i, c := range calls {
			if !c.done {
				allDone = false
				continue
			}
			if c.res.Err == nil && h.g.state == StatePreparingRebalance && h.g.members[c.res.MemberID].joinReply == nil {
				calls[i] = h.join(consumerJoin(c.res.MemberID, fmt.Sprintf("c%d", i)))
				allDone = false
			}
		}
		if allDone && h.g.state == StateCompletingRebalance {
			break
		}
	}
	if h.g.state != StateCompletingRebalance {
		h.t.Fatalf("group state %v after %d joins, want CompletingRebalance", h.g.state, n)
	}
	ids := []string{h.g.leader}
	for _, c := range calls {
		if c.res.Err != nil {
			h.t.Fatalf("join: %v", c.res.Err)
		}
		if c.res.MemberID != h.g.leader {
			ids = append(ids, c.res.MemberID)
		}
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("assignment-of-" + id)
	}
	var syncs []*syncCall
	for _, id := range ids {
		syncs = append(syncs, h.sync(id, h.g.generation, assign))
	}
	h.completeStores(nil)
	for i, s := range syncs {
		if !s.done || s.res.Err != nil {
			h.t.Fatalf("sync of %s: %+v", ids[i], s)
		}
	}
	if h.g.state != StateStable {
		h.t.Fatalf("state %v after sync, want Stable", h.g.state)
	}
	return ids
}

func TestJoinFirstMemberLeadsGenerationOne(t *testing.T) {
	h := newHarness(t, 0)
	c := h.joinNew("c0")
	if !c.done || c.res.Err != nil {
		t.Fatalf("join: %+v", c)
	}
	r := c.res
	if r.Generation != 1 || r.LeaderID != r.MemberID || len(r.Members) != 1 || *r.ProtocolName != "range" || *r.ProtocolType != "consumer" {
		t.Fatalf("join result %+v: want generation 1 led by the member itself with protocol range", r)
	}
	if string(r.Members[0].Metadata) != "c0/range" {
		t.Fatalf("leader sees metadata %q, want c0/range", r.Members[0].Metadata)
	}
	if h.g.state != StateCompletingRebalance {
		t.Fatalf("state %v, want CompletingRebalance", h.g.state)
	}
}

func TestMemberIDRequiredOnFirstJoinFromV4(t *testing.T) {
	h := newHarness(t, 0)
	p := consumerJoin("", "c0")
	p.RequireKnownMemberID = true
	first := h.join(p)
	if !errors.Is(first.res.Err, ErrMemberIDRequired) || first.res.MemberID == "" {
		t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", first.res)
	}
	if h.g.size() != 0 || !h.g.isPending(first.res.MemberID) {
		t.Fatalf("after MEMBER_ID_REQUIRED: %d members, pending %v; want the id pending only", h.g.size(), h.g.pending)
	}
	// The pending id is forgotten after the session timeout if unused.
	h.advance(int64(p.SessionTimeoutMs))
	if h.g.isPending(first.res.MemberID) {
		t.Fatalf("pending member id kept after its session timeout")
	}
	// Before v4 the member is admitted at once.
	old := h.join(consumerJoin("", "c1"))
	if !old.done || old.res.Err != nil || old.res.Generation != 1 {
		t.Fatalf("v3-style join: %+v, want to join generation 1 directly", old.res)
	}
}

func TestSyncDeliversAssignmentsOnlyAfterTheGroupIsStored(t *testing.T) {
	h := newHarness(t, 0)
	a := h.joinNew("c0")
	b := h.joinNew("c1") // triggers a rebalance the first member must join
	if h.g.state != StatePreparingRebalance || b.done {
		t.Fatalf("state %v, second join answered=%v; want PreparingRebalance with the join parked", h.g.state, b.done)
	}
	a = h.join(consumerJoin(a.res.MemberID, "c0"))
	if !a.done || !b.done || a.res.Generation != 2 || b.res.Generation != 2 {
		t.Fatalf("joins after both rejoined: %+v / %+v, want generation 2", a.res, b.res)
	}
	leader, follower := a, b
	if b.res.MemberID == b.res.LeaderID {
		leader, follower = b, a
	}
	if len(follower.res.Members) != 0 || len(leader.res.Members) != 2 {
		t.Fatalf("member lists: leader %d, follower %d; want 2 and 0", len(leader.res.Members), len(follower.res.Members))
	}

	fs := h.sync(follower.res.MemberID, 2, nil)
	if fs.done {
		t.Fatalf("follower's sync answered before the leader's: %+v", fs.res)
	}
	assign := map[string][]byte{leader.res.MemberID: []byte("L"), follower.res.MemberID: []byte("F")}
	ls := h.sync(leader.res.MemberID, 2, assign)
	if ls.done || fs.done || len(h.stores) != 1 {
		t.Fatalf("syncs answered before the group was stored (stores queued: %d)", len(h.stores))
	}
	if v := h.stores[0].v; v.Generation != 2 || len(v.Members) != 2 {
		t.Fatalf("stored group value %+v, want generation 2 with 2 members", v)
	}
	h.completeStores(nil)
	if string(ls.res.Assignment) != "L" || string(fs.res.Assignment) != "F" || h.g.state != StateStable {
		t.Fatalf("after store: leader %q follower %q state %v", ls.res.Assignment, fs.res.Assignment, h.g.state)
	}
	// A later sync in Stable returns the stored assignment directly.
	again := h.sync(follower.res.MemberID, 2, nil)
	if !again.done || string(again.res.Assignment) != "F" {
		t.Fatalf("sync in Stable: %+v", again.res)
	}
}

func TestFailedStoreOfAssignmentRebalances(t *testing.T) {
	h := newHarness(t, 0)
	c := h.joinNew("c0")
	s := h.sync(c.res.MemberID, c.res.Generation, map[string][]byte{c.res.MemberID: []byte("x")})
	h.completeStores(ErrNotCoordinator)
	if !errors.Is(s.res.Err, ErrNotCoordinator) || h.g.state != StatePreparingRebalance {
		t.Fatalf("sync after failed store: %+v, state %v; want the error and a new rebalance", s.res, h.g.state)
	}
}

func TestHeartbeatExpiryRemovesMemberAndRebalances(t *testing.T) {
	h := newHarness(t, 0)
	ids := h.stableGroup(2)
	live, dead := ids[0], ids[1]
	gen := h.g.generation
	// The live member heartbeats every 3s; the other is silent.
	for range 3 {
		h.advance(3000)
		if err := h.g.heartbeat(h.now, live, nil, gen); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	h.advance(1000) // 10s since the silent member's last contact
	if h.g.has(dead) {
		t.Fatalf("member %s kept after its session timeout", dead)
	}
	if h.g.state != StatePreparingRebalance {
		t.Fatalf("state %v after expiry, want PreparingRebalance", h.g.state)
	}
	if err := h.g.heartbeat(h.now, live, nil, gen); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat during rebalance: %v, want REBALANCE_IN_PROGRESS", err)
	}
	j := h.join(consumerJoin(live, "c0"))
	if !j.done || j.res.Generation != gen+1 || len(j.res.Members) != 1 || j.res.LeaderID != live {
		t.Fatalf("rejoin: %+v, want generation %d with the live member alone", j.res, gen+1)
	}
}

func TestLeaveRemovesMemberAndRebalances(t *testing.T) {
	h := newHarness(t, 0)
	ids := h.stableGroup(2)
	errs := h.g.leaveGroup(h.now, []LeaveMember{{MemberID: ids[1]}, {MemberID: "nobody"}})
	if errs[0] != nil || !errors.Is(errs[1], ErrUnknownMemberID) {
		t.Fatalf("leave errors %v, want [nil UNKNOWN_MEMBER_ID]", errs)
	}
	if h.g.has(ids[1]) || h.g.state != StatePreparingRebalance {
		t.Fatalf("after leave: member kept=%v state %v", h.g.has(ids[1]), h.g.state)
	}
	// The last member leaving during the rebalance empties the group.
	h.g.leaveGroup(h.now, []LeaveMember{{MemberID: ids[0]}})
	if h.g.state != StateEmpty || h.g.size() != 0 {
		t.Fatalf("state %v with %d members after everyone left, want Empty", h.g.state, h.g.size())
	}
	if len(h.stores) != 1 || len(h.stores[0].v.Members) != 0 {
		t.Fatalf("empty group not stored: %d stores", len(h.stores))
	}
}

func TestRejoinDuringRebalanceWithNewMetadataAndRemovalOfLateMembers(t *testing.T) {
	h := newHarness(t, 0)
	ids := h.stableGroup(3)
	gen := h.g.generation
	// The leader rejoins with a new protocol list: rebalance.
	a := h.join(consumerJoin(ids[0], "c0", "roundrobin", "range"))
	if a.done || h.g.state != StatePreparingRebalance {
		t.Fatalf("leader's rejoin answered=%v, state %v; want it parked in PreparingRebalance", a.done, h.g.state)
	}
	b := h.join(consumerJoin(ids[1], "c1", "range"))
	if b.done {
		t.Fatalf("join completed while a member had not rejoined")
	}
	// The third member never rejoins: after the rebalance timeout it is
	// removed and the others get the new generation.
	for range 5 {
		h.advance(10000)
		if a.done {
			break
		}
		h.g.heartbeat(h.now, ids[1], nil, gen)
	}
	h.advance(10000)
	if !a.done || !b.done {
		t.Fatalf("joins not completed after the rebalance timeout")
	}
	if h.g.has(ids[2]) || a.res.Generation != gen+1 || len(a.res.Members)+len(b.res.Members) != 2 {
		t.Fatalf("after timeout: third member kept=%v, generation %d, members %d/%d", h.g.has(ids[2]), a.res.Generation, len(a.res.Members), len(b.res.Members))
	}
	if *a.res.ProtocolName != "range" {
		t.Fatalf("protocol %q, want range (the only one both support)", *a.res.ProtocolName)
	}
}

func TestStaticMemberRejoinTakesOverWithoutRebalance(t *testing.T) {
	h := newHarness(t, 0)
	inst := "instance-a"
	p := consumerJoin("", "c0")
	p.InstanceID = &inst
	p.RequireKnownMemberID = false // static members skip MEMBER_ID_REQUIRED
	j := h.join(p)
	old := j.res.MemberID
	s := h.sync(old, j.res.Generation, map[string][]byte{old: []byte("A")})
	h.completeStores(nil)
	if s.res.Err != nil || h.g.state != StateStable {
		t.Fatalf("setup: %+v state %v", s.res, h.g.state)
	}
	gen := h.g.generation

	// The instance restarts and joins with no member id, same metadata.
	again := h.join(p)
	if again.done {
		t.Fatalf("static rejoin answered before its new member id was stored")
	}
	h.completeStores(nil)
	r := again.res
	if r.Err != nil || r.MemberID == old || r.Generation != gen || h.g.state != StateStable {
		t.Fatalf("static rejoin: %+v, state %v; want a new member id in generation %d and no rebalance", r, h.g.state, gen)
	}
	if got := h.g.members[r.MemberID].assignment; string(got) != "A" {
		t.Fatalf("assignment after replacement %q, want A kept", got)
	}
	if err := h.g.heartbeat(h.now, old, &inst, gen); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("heartbeat of the replaced member id: %v, want FENCED_INSTANCE_ID", err)
	}
	if err := h.g.heartbeat(h.now, r.MemberID, &inst, gen); err != nil {
		t.Fatalf("heartbeat of the new member id: %v", err)
	}
}

func TestStaticMemberRejoinWithNewProtocolRebalances(t *testing.T) {
	h := newHarness(t, 0)
	inst := "instance-a"
	p := consumerJoin("", "c0", "range")
	p.InstanceID = &inst
	j := h.join(p)
	h.sync(j.res.MemberID, j.res.Generation, nil)
	h.completeStores(nil)
	// Now preferring roundrobin (still supporting range, or the join would
	// be inconsistent): the group's vote changes, so it must rebalance.
	p2 := consumerJoin("", "c0", "roundrobin", "range")
	p2.InstanceID = &inst
	j2 := h.join(p2)
	if j2.res.Err != nil || !j2.done || *j2.res.ProtocolName != "roundrobin" || j2.res.Generation != j.res.Generation+1 {
		t.Fatalf("static rejoin with a new preference: %+v, want generation %d with roundrobin", j2.res, j.res.Generation+1)
	}
	if h.g.state != StateCompletingRebalance {
		t.Fatalf("group stayed Stable although the selected protocol changes")
	}
}

func TestIllegalGeneration(t *testing.T) {
	h := newHarness(t, 0)
	ids := h.stableGroup(1)
	gen := h.g.generation
	if err := h.g.heartbeat(h.now, ids[0], nil, gen-1); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("heartbeat with old generation: %v, want ILLEGAL_GENERATION", err)
	}
	s := h.sync(ids[0], gen+1, nil)
	if !errors.Is(s.res.Err, ErrIllegalGeneration) {
		t.Fatalf("sync with wrong generation: %v, want ILLEGAL_GENERATION", s.res.Err)
	}
	if err := h.g.validateOffsetCommit(ids[0], nil, gen-1); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("commit with old generation: %v, want ILLEGAL_GENERATION", err)
	}
}

func TestUnknownMemberID(t *testing.T) {
	h := newHarness(t, 0)
	h.stableGroup(1)
	gen := h.g.generation
	if err := h.g.heartbeat(h.now, "stranger", nil, gen); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("heartbeat: %v, want UNKNOWN_MEMBER_ID", err)
	}
	if s := h.sync("stranger", gen, nil); !errors.Is(s.res.Err, ErrUnknownMemberID) {
		t.Fatalf("sync: %v, want UNKNOWN_MEMBER_ID", s.res.Err)
	}
	if j := h.join(consumerJoin("stranger", "x")); !errors.Is(j.res.Err, ErrUnknownMemberID) {
		t.Fatalf("join with an unknown member id: %v, want UNKNOWN_MEMBER_ID", j.res.Err)
	}
	if err := h.g.validateOffsetCommit("stranger", nil, gen); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("commit: %v, want UNKNOWN_MEMBER_ID", err)
	}
}

func TestProtocolSelectionVotesAmongProtocolsAllMembersSupport(t *testing.T) {
	h := newHarness(t, 0)
	// "sticky" is most preferred by two members but c2 lacks it; of the
	// protocols all support, roundrobin gets two first-choice votes.
	h.g.members = map[string]*member{}
	for i, ps := range [][]string{{"sticky", "roundrobin", "range"}, {"sticky", "roundrobin", "range"}, {"range", "roundrobin"}} {
		m := &member{id: fmt.Sprintf("m%d", i)}
		for _, name := range ps {
			m.protocols = append(m.protocols, Protocol{Name: name})
		}
		h.g.members[m.id] = m
		h.g.order = append(h.g.order, m.id)
	}
	if got := h.g.selectProtocol(); got != "roundrobin" {
		t.Fatalf("selected %q, want roundrobin", got)
	}
}

func TestInconsistentGroupProtocol(t *testing.T) {
	h := newHarness(t, 0)
	h.stableGroup(1)
	other := consumerJoin("", "x", "roundrobin") // no protocol in common
	if j := h.join(other); !errors.Is(j.res.Err, ErrInconsistentProtocol) {
		t.Fatalf("join without a common protocol: %v, want INCONSISTENT_GROUP_PROTOCOL", j.res.Err)
	}
	connect := consumerJoin("", "y")
	connect.ProtocolType = "connect"
	if j := h.join(connect); !errors.Is(j.res.Err, ErrInconsistentProtocol) {
		t.Fatalf("join with another protocol type: %v, want INCONSISTENT_GROUP_PROTOCOL", j.res.Err)
	}
	empty := newHarness(t, 0)
	none := consumerJoin("", "z")
	none.Protocols = nil
	if j := empty.join(none); !errors.Is(j.res.Err, ErrInconsistentProtocol) {
		t.Fatalf("join with no protocols: %v, want INCONSISTENT_GROUP_PROTOCOL", j.res.Err)
	}
}

func TestInitialRebalanceDelayWaitsForMoreMembers(t *testing.T) {
	h := newHarness(t, 3000)
	a := h.joinNew("c0")
	h.advance(2000)
	b := h.joinNew("c1")
	if a.done || b.done {
		t.Fatalf("joins completed before the initial delay")
	}
	h.advance(1000) // first delay over, but a member arrived: extended
	if a.done {
		t.Fatalf("join completed although a new member arrived during the delay")
	}
	h.advance(3000)
	if !a.done || !b.done || a.res.Generation != 1 {
		t.Fatalf("joins after the extended delay: %+v / %+v, want both in generation 1", a.res, b.res)
	}
}

func TestUnloadAnswersParkedRequests(t *testing.T) {
	h := newHarness(t, 0)
	ids := h.stableGroup(1)
	j := h.join(consumerJoin(ids[0], "c0")) // leader rejoin parks... and completes alone
	if !j.done {
		t.Fatalf("sole member's rejoin should complete at once")
	}
	s := h.sync(ids[0], h.g.generation, nil)
	h.g.unload(ErrNotCoordinator)
	if !s.done || !errors.Is(s.res.Err, ErrNotCoordinator) {
		t.Fatalf("parked sync after unload: %+v, want NOT_COORDINATOR", s)
	}
	if err := h.g.heartbeat(h.now, ids[0], nil, h.g.generation); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("heartbeat to an unloaded group: %v", err)
	}
}

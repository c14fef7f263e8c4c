package group

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/gokafka/gokafka/cluster"
)

// Tests of the consumer protocol's state machine (KIP-848), each named
// after the rule it checks.

func tid(b byte) cluster.TopicID { return cluster.TopicID{b} }

func testView(ts ...TopicMeta) *TopicsView { return NewTopicsView(ts) }

func newTestConsumerGroup(maxSize int) *consumerGroup {
	n := 0
	return newConsumerGroup("g", &consumerDeps{
		sessionTimeoutMs:    45000,
		heartbeatIntervalMs: 5000,
		maxSize:             maxSize,
		newMemberID:         func() string { n++; return fmt.Sprintf("gen-%d", n) },
	})
}

// client is a member: it owns what it was last told and heartbeats with
// it; held are the partitions it really consumes, which a slow member
// gives up only a heartbeat after it was told to (see hbHeld).
type client struct {
	id       string
	assignor string
	held     partSet
	epoch    int32
	owned    map[cluster.TopicID][]int32
}

func (c *client) join(t *testing.T, g *consumerGroup, now int64, view *TopicsView, topics ...string) ConsumerHeartbeatResult {
	t.Helper()
	p := &ConsumerHeartbeat{Version: 1, MemberID: c.id, MemberEpoch: 0, RebalanceTimeoutMs: 60000, TopicNames: topics, Owned: map[cluster.TopicID][]int32{}}
	if c.assignor != "" {
		p.ServerAssignor = &c.assignor
	}
	if err, msg := validateConsumerHeartbeat(p); err != nil {
		t.Fatalf("join invalid: %v %s", err, msg)
	}
	return c.apply(g.heartbeat(now, view, p))
}

func (c *client) hb(g *consumerGroup, now int64, view *TopicsView) ConsumerHeartbeatResult {
	owned := map[cluster.TopicID][]int32{}
	for k, v := range c.owned {
		owned[k] = v
	}
	return c.apply(g.heartbeat(now, view, &ConsumerHeartbeat{Version: 1, MemberID: c.id, MemberEpoch: c.epoch, RebalanceTimeoutMs: -1, Owned: owned}))
}

// hbHeld heartbeats reporting the partitions the member really holds;
// it takes newly assigned partitions at once and, unless slow, gives up
// revoked ones at once too.
func (c *client) hbHeld(g *consumerGroup, now int64, view *TopicsView, slow bool) ConsumerHeartbeatResult {
	if c.held == nil {
		c.held = partSet{}
	}
	r := g.heartbeat(now, view, &ConsumerHeartbeat{Version: 1, MemberID: c.id, MemberEpoch: c.epoch, RebalanceTimeoutMs: -1, Owned: c.held.byTopic()})
	c.apply(r)
	if r.Err != nil {
		return r
	}
	assigned := partSetOf(c.owned)
	for tp := range assigned {
		c.held[tp] = struct{}{}
	}
	if !slow {
		for tp := range c.held {
			if !assigned.has(tp) {
				delete(c.held, tp)
			}
		}
	}
	return r
}

func (c *client) apply(r ConsumerHeartbeatResult) ConsumerHeartbeatResult {
	if r.Err == nil {
		c.epoch = r.MemberEpoch
		if r.Assignment != nil {
			c.owned = r.Assignment
		}
	}
	return r
}

func count(m map[cluster.TopicID][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// checkExclusive: no partition is owned by two members, and the owners
// index agrees with the members' sets.
func checkExclusive(t *testing.T, g *consumerGroup) {
	t.Helper()
	seen := map[TopicPartitionID]string{}
	for _, m := range g.members {
		for _, s := range []partSet{m.assigned, m.revoking} {
			for tp := range s {
				if other, ok := seen[tp]; ok {
					t.Fatalf("partition %v owned by %s and %s", tp, other, m.id)
				}
				seen[tp] = m.id
				if g.owners[tp] != m.id {
					t.Fatalf("owners[%v] = %q, member %s holds it", tp, g.owners[tp], m.id)
				}
			}
		}
	}
	if len(seen) != len(g.owners) {
		t.Fatalf("owners has %d partitions, members hold %d", len(g.owners), len(seen))
	}
}

func TestFirstMemberGetsEveryPartitionAtEpochOne(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 3})
	a := &client{id: "a"}
	r := a.join(t, g, 0, view, "t")
	if r.Err != nil || r.MemberEpoch != 1 || count(r.Assignment) != 3 {
		t.Fatalf("join = %+v", r)
	}
	if g.state != ConsumerStable || g.groupEpoch != 1 || g.assignmentEpoch != 1 {
		t.Fatalf("group %v epoch %d/%d", g.state, g.groupEpoch, g.assignmentEpoch)
	}
}

// A partition moves to a new member only after its owner acknowledged the
// revocation; until then the new member is UNRELEASED_PARTITIONS.
func TestPartitionIsRevokedAndAcknowledgedBeforeReassignment(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 4})
	a, b := &client{id: "a"}, &client{id: "b"}
	a.join(t, g, 0, view, "t")
	r := b.join(t, g, 1, view, "t")
	checkExclusive(t, g)
	if r.MemberEpoch != 2 || count(r.Assignment) != 0 || g.members["b"].state != memberUnreleased {
		t.Fatalf("b join = %+v state %v", r, g.members["b"].state)
	}
	if g.state != ConsumerReconciling {
		t.Fatalf("state %v", g.state)
	}
	// a is told to give up two partitions, keeping its epoch.
	r = a.hb(g, 2, view)
	checkExclusive(t, g)
	if r.MemberEpoch != 1 || count(r.Assignment) != 2 || g.members["a"].state != memberUnrevoked {
		t.Fatalf("a = %+v", r)
	}
	// b still gets nothing: a has not acknowledged.
	if r = b.hb(g, 3, view); count(b.owned) != 0 {
		t.Fatalf("b got %v before a released", b.owned)
	}
	// a still reporting all four is no acknowledgement.
	r = g.heartbeat(3, view, &ConsumerHeartbeat{MemberID: "a", MemberEpoch: 1, RebalanceTimeoutMs: -1, Owned: map[cluster.TopicID][]int32{tid(1): {0, 1, 2, 3}}})
	if r.Err != nil || r.MemberEpoch != 1 || g.members["a"].state != memberUnrevoked {
		t.Fatalf("a without ack = %+v", r)
	}
	if r = b.hb(g, 3, view); count(b.owned) != 0 {
		t.Fatalf("b got %v before a acknowledged", b.owned)
	}
	// a acknowledges by heartbeating without them: epoch 2.
	if r = a.hb(g, 4, view); r.MemberEpoch != 2 || g.members["a"].state != memberStable {
		t.Fatalf("a ack = %+v", r)
	}
	checkExclusive(t, g)
	if r = b.hb(g, 5, view); count(b.owned) != 2 || g.members["b"].state != memberStable {
		t.Fatalf("b after release = %+v", r)
	}
	if g.state != ConsumerStable {
		t.Fatalf("state %v", g.state)
	}
}

func TestMemberEpochAheadOrBehindIsFenced(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	a, b := &client{id: "a"}, &client{id: "b"}
	a.join(t, g, 0, view, "t")
	b.join(t, g, 0, view, "t")
	a.hb(g, 0, view)
	a.hb(g, 0, view) // a acked, now at epoch 2 with one partition
	if a.epoch != 2 {
		t.Fatalf("a epoch %d", a.epoch)
	}
	for _, tc := range []struct {
		name  string
		epoch int32
		owned map[cluster.TopicID][]int32
		want  error
	}{
		{"ahead", 3, map[cluster.TopicID][]int32{}, ErrFencedMemberEpoch},
		{"previous epoch owning a subset", 1, a.owned, nil},
		{"previous epoch without owned partitions given", 1, nil, ErrFencedMemberEpoch},
		{"previous epoch owning more than assigned", 1, map[cluster.TopicID][]int32{tid(1): {0, 1}}, ErrFencedMemberEpoch},
		{"older than previous", 0, map[cluster.TopicID][]int32{}, nil}, // epoch 0 is a rejoin
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.epoch == 0 {
				return
			}
			r := g.heartbeat(0, view, &ConsumerHeartbeat{MemberID: "a", MemberEpoch: tc.epoch, RebalanceTimeoutMs: -1, Owned: tc.owned})
			if !errors.Is(r.Err, tc.want) && !(tc.want == nil && r.Err == nil) {
				t.Fatalf("err %v, want %v", r.Err, tc.want)
			}
		})
	}
	if r := g.heartbeat(0, view, &ConsumerHeartbeat{MemberID: "zzz", MemberEpoch: 1, RebalanceTimeoutMs: -1}); !errors.Is(r.Err, ErrUnknownMemberID) {
		t.Fatalf("unknown member: %v", r.Err)
	}
}

// A member rejoining with epoch 0 under its id has abandoned its
// partitions; it gets them back at the current epoch.
func TestRejoinWithEpochZeroStartsOver(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	a := &client{id: "a"}
	a.join(t, g, 0, view, "t")
	r := a.join(t, g, 1, view, "t")
	if r.Err != nil || r.MemberEpoch != 1 || count(r.Assignment) != 2 {
		t.Fatalf("rejoin = %+v", r)
	}
	checkExclusive(t, g)
}

func TestLeaveFreesPartitionsAndBumpsGroupEpoch(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	a, b := &client{id: "a"}, &client{id: "b"}
	a.join(t, g, 0, view, "t")
	b.join(t, g, 0, view, "t")
	a.hb(g, 0, view)
	a.hb(g, 0, view)
	b.hb(g, 0, view)
	epoch := g.groupEpoch
	r := g.heartbeat(0, view, &ConsumerHeartbeat{MemberID: "a", MemberEpoch: -1})
	if r.Err != nil || r.MemberEpoch != -1 || g.groupEpoch != epoch+1 {
		t.Fatalf("leave = %+v epoch %d", r, g.groupEpoch)
	}
	if r = b.hb(g, 0, view); count(b.owned) != 2 {
		t.Fatalf("b after a left = %+v", r)
	}
	if r := g.heartbeat(0, view, &ConsumerHeartbeat{MemberID: "a", MemberEpoch: -1}); !errors.Is(r.Err, ErrUnknownMemberID) {
		t.Fatalf("second leave: %v", r.Err)
	}
}

// KIP-848 static membership: epoch -2 keeps the assignment for the
// session; a new member with the same instance id takes it over, but not
// while the old one is still there.
func TestStaticMemberTemporaryLeaveAndReplacement(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	join := func(id string) ConsumerHeartbeatResult {
		return g.heartbeat(0, view, &ConsumerHeartbeat{Version: 1, MemberID: id, InstanceID: strp("i1"), RebalanceTimeoutMs: 1000, TopicNames: []string{"t"}, Owned: map[cluster.TopicID][]int32{}})
	}
	if r := join("a"); r.Err != nil || count(r.Assignment) != 2 {
		t.Fatalf("a = %+v", r)
	}
	if r := join("b"); !errors.Is(r.Err, ErrUnreleasedInstanceID) {
		t.Fatalf("b while a active: %v", r.Err)
	}
	epoch := g.groupEpoch
	r := g.heartbeat(0, view, &ConsumerHeartbeat{Version: 1, MemberID: "a", MemberEpoch: -2, InstanceID: strp("i1")})
	if r.Err != nil || r.MemberEpoch != -2 || g.groupEpoch != epoch {
		t.Fatalf("static leave = %+v", r)
	}
	if r := join("b"); r.Err != nil || count(r.Assignment) != 2 || r.MemberEpoch != epoch {
		t.Fatalf("b replacing a = %+v", r)
	}
	if _, ok := g.members["a"]; ok {
		t.Fatal("a still a member")
	}
	checkExclusive(t, g)
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	a := &client{id: "a"}
	a.join(t, g, 1000, view, "t")
	if d := g.nextDeadline(); d != 1000+45000 {
		t.Fatalf("deadline %d", d)
	}
	g.tick(1000 + 44999)
	if len(g.members) != 1 {
		t.Fatal("removed early")
	}
	g.tick(1000 + 45000)
	if len(g.members) != 0 || g.state != ConsumerEmpty || len(g.owners) != 0 {
		t.Fatalf("members %d state %v owners %d", len(g.members), g.state, len(g.owners))
	}
	if r := a.hb(g, 50000, view); !errors.Is(r.Err, ErrUnknownMemberID) {
		t.Fatalf("expired member heartbeat: %v", r.Err)
	}
}

func TestUnacknowledgedRevocationExpiresAtRebalanceTimeout(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"t", tid(1), 2})
	a, b := &client{id: "a"}, &client{id: "b"}
	a.join(t, g, 0, view, "t") // rebalance timeout 60000
	b.join(t, g, 0, view, "t")
	a.hb(g, 100, view) // told to revoke
	if g.members["a"].state != memberUnrevoked {
		t.Fatal("a not revoking")
	}
	// b heartbeats to keep its session; a only keeps its session without
	// acknowledging (owned unchanged: nil).
	for now := int64(5000); now < 60100; now += 5000 {
		g.heartbeat(now, view, &ConsumerHeartbeat{MemberID: "a", MemberEpoch: 1, RebalanceTimeoutMs: -1})
		b.hb(g, now, view)
		g.tick(now)
	}
	g.tick(60100)
	if _, ok := g.members["a"]; ok {
		t.Fatal("a kept its partitions past the rebalance timeout")
	}
	b.hb(g, 60200, view)
	if count(b.owned) != 2 {
		t.Fatalf("b owns %v", b.owned)
	}
}

// Kafka matches SubscribedTopicRegex against the whole name (RE2J
// matches()).
func TestRegexMatchesWholeTopicNameAndFollowsNewTopics(t *testing.T) {
	g := newTestConsumerGroup(10)
	view := testView(TopicMeta{"foo", tid(1), 1}, TopicMeta{"foobar", tid(2), 1})
	p := &ConsumerHeartbeat{Version: 1, MemberID: "a", RebalanceTimeoutMs: 1000, TopicRegex: strp("foo"), Owned: map[cluster.TopicID][]int32{}}
	r := g.heartbeat(0, view, p)
	if r.Err != nil || len(r.Assignment) != 1 || r.Assignment[tid(1)] == nil {
		t.Fatalf("regex foo = %+v", r)
	}
	epoch := g.groupEpoch
	view2 := testView(TopicMeta{"foo", tid(1), 1}, TopicMeta{"foobar", tid(2), 1}, TopicMeta{"foo", tid(3), 1})
	_ = view2
	// A new topic matching the regex bumps the group epoch.
	g2 := newTestConsumerGroup(10)
	a := &client{id: "a"}
	g2.heartbeat(0, view, &ConsumerHeartbeat{Version: 1, MemberID: "a", RebalanceTimeoutMs: 1000, TopicRegex: strp("foo.*"), Owned: map[cluster.TopicID][]int32{}})
	a.epoch = g2.members["a"].epoch
	a.owned = g2.members["a"].assigned.byTopic()
	more := testView(TopicMeta{"foo", tid(1), 1}, TopicMeta{"foobar", tid(2), 1}, TopicMeta{"food", tid(4), 2})
	e := g2.groupEpoch
	a.hb(g2, 1, more)
	if g2.groupEpoch != e+1 || count(a.owned) != 4 {
		t.Fatalf("epoch %d->%d owned %v", e, g2.groupEpoch, a.owned)
	}
	if g.groupEpoch != epoch {
		t.Fatal("unrelated group moved")
	}
}

func TestPartitionIncreaseBumpsEpochAndAssignsNewPartitions(t *testing.T) {
	g := newTestConsumerGroup(10)
	a := &client{id: "a"}
	a.join(t, g, 0, testView(TopicMeta{"t", tid(1), 1}), "t")
	e := g.groupEpoch
	a.hb(g, 1, testView(TopicMeta{"t", tid(1), 3}))
	if g.groupEpoch != e+1 || count(a.owned) != 3 {
		t.Fatalf("epoch %d owned %v", g.groupEpoch, a.owned)
	}
	// Deleting the topic revokes its partitions.
	a.hb(g, 2, testView())
	if count(a.owned) != 0 {
		t.Fatalf("owned %v after delete", a.owned)
	}
}

func TestHeartbeatValidation(t *testing.T) {
	owned := map[cluster.TopicID][]int32{}
	for _, tc := range []struct {
		name string
		p    ConsumerHeartbeat
		want error
	}{
		{"v1 requires member id", ConsumerHeartbeat{Version: 1, RebalanceTimeoutMs: 1, TopicNames: []string{}, Owned: owned}, ErrInvalidRequest},
		{"v0 join may omit member id", ConsumerHeartbeat{Version: 0, RebalanceTimeoutMs: 1, TopicNames: []string{}, Owned: owned}, nil},
		{"join needs rebalance timeout", ConsumerHeartbeat{Version: 1, MemberID: "m", RebalanceTimeoutMs: -1, TopicNames: []string{}, Owned: owned}, ErrInvalidRequest},
		{"join needs empty owned", ConsumerHeartbeat{Version: 1, MemberID: "m", RebalanceTimeoutMs: 1, TopicNames: []string{}, Owned: map[cluster.TopicID][]int32{tid(1): {0}}}, ErrInvalidRequest},
		{"join needs owned given", ConsumerHeartbeat{Version: 1, MemberID: "m", RebalanceTimeoutMs: 1, TopicNames: []string{}}, ErrInvalidRequest},
		{"join needs a subscription", ConsumerHeartbeat{Version: 1, MemberID: "m", RebalanceTimeoutMs: 1, Owned: owned}, ErrInvalidRequest},
		{"empty instance id", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: 3, InstanceID: strp("")}, ErrInvalidRequest},
		{"empty rack id", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: 3, RackID: strp("")}, ErrInvalidRequest},
		{"epoch below -2", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: -3}, ErrInvalidRequest},
		{"static leave needs instance id", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: -2}, ErrInvalidRequest},
		{"unknown assignor", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: 3, ServerAssignor: strp("sticky")}, ErrUnsupportedAssignor},
		{"range assignor", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: 3, ServerAssignor: strp("range")}, nil},
		{"bad regex", ConsumerHeartbeat{Version: 1, MemberID: "m", MemberEpoch: 3, TopicRegex: strp("(")}, ErrInvalidRegularExpression},
		{"join with an empty regex subscribes to nothing", ConsumerHeartbeat{Version: 1, MemberID: "m", RebalanceTimeoutMs: 1, TopicRegex: strp(""), Owned: owned}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := validateConsumerHeartbeat(&tc.p)
			if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestGroupMaxSizeRefusesNewMembers(t *testing.T) {
	g := newTestConsumerGroup(1)
	view := testView(TopicMeta{"t", tid(1), 1})
	(&client{id: "a"}).join(t, g, 0, view, "t")
	if r := (&client{id: "b"}).join(t, g, 0, view, "t"); !errors.Is(r.Err, ErrGroupMaxSizeReached) {
		t.Fatalf("b: %v", r.Err)
	}
}

func TestOffsetCommitValidationByMemberEpoch(t *testing.T) {
	g := newTestConsumerGroup(10)
	if err := g.validateOffsetCommit("", nil, -1, false, 9); err != nil {
		t.Fatalf("admin commit to empty group: %v", err)
	}
	view := testView(TopicMeta{"t", tid(1), 1})
	a := &client{id: "a"}
	a.join(t, g, 0, view, "t")
	for _, tc := range []struct {
		name    string
		member  string
		epoch   int32
		txn     bool
		version int16
		want    error
	}{
		{"current epoch", "a", 1, false, 9, nil},
		{"stale epoch", "a", 0, false, 9, ErrStaleMemberEpoch},
		{"newer epoch", "a", 2, false, 9, ErrStaleMemberEpoch},
		{"old version", "a", 1, false, 8, ErrUnsupportedVersion},
		{"txn at old version", "a", 1, true, 3, nil},
		{"unknown member", "b", 1, false, 9, ErrUnknownMemberID},
		{"admin commit to non-empty group", "", -1, false, 9, ErrUnknownMemberID},
		{"txn commit with only a group id", "", -1, true, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := g.validateOffsetCommit(tc.member, nil, tc.epoch, tc.txn, tc.version)
			if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if err := g.validateOffsetFetch(nil, -1); err != nil {
		t.Fatalf("anonymous fetch: %v", err)
	}
	if err := g.validateOffsetFetch(strp(""), -1); err != nil {
		t.Fatalf("anonymous fetch with an empty member id: %v", err)
	}
	if err := g.validateOffsetFetch(strp("a"), 1); err != nil {
		t.Fatalf("member fetch: %v", err)
	}
	if err := g.validateOffsetFetch(strp("a"), 0); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Fatalf("stale fetch: %v", err)
	}
}

func TestUniformAssignorIsBalancedAndSticky(t *testing.T) {
	ts := []TopicMeta{{"a", tid(1), 7}, {"b", tid(2), 5}}
	ms := []assignMember{{id: "m1", topics: ts}, {id: "m2", topics: ts}}
	first := assignUniform(ms)
	if n1, n2 := len(first["m1"]), len(first["m2"]); n1+n2 != 12 || n1-n2 > 1 || n2-n1 > 1 {
		t.Fatalf("counts %d %d", n1, n2)
	}
	ms = []assignMember{{id: "m1", topics: ts, prev: first["m1"]}, {id: "m2", topics: ts, prev: first["m2"]}, {id: "m3", topics: ts}}
	second := assignUniform(ms)
	for _, id := range []string{"m1", "m2", "m3"} {
		if len(second[id]) != 4 {
			t.Fatalf("%s has %d", id, len(second[id]))
		}
	}
	for _, id := range []string{"m1", "m2"} {
		for tp := range second[id] {
			if !first[id].has(tp) {
				t.Fatalf("%s gained %v: only m3 should gain", id, tp)
			}
		}
	}
}

func TestUniformAssignorGivesTopicsOnlyToSubscribers(t *testing.T) {
	a, b := TopicMeta{"a", tid(1), 4}, TopicMeta{"b", tid(2), 4}
	out := assignUniform([]assignMember{{id: "m1", topics: []TopicMeta{a}}, {id: "m2", topics: []TopicMeta{a, b}}})
	for tp := range out["m1"] {
		if tp.Topic != a.ID {
			t.Fatalf("m1 got %v", tp)
		}
	}
	if len(out["m1"])+len(out["m2"]) != 8 || len(out["m1"]) != 4 {
		t.Fatalf("m1 %d m2 %d", len(out["m1"]), len(out["m2"]))
	}
}

func TestRangeAssignorGivesContiguousRanges(t *testing.T) {
	ts := []TopicMeta{{"a", tid(1), 5}}
	out := assignRange([]assignMember{{id: "m2", topics: ts}, {id: "m1", topics: ts}})
	got := func(id string) []int32 { return out[id].byTopic()[tid(1)] }
	if !slices.Equal(got("m1"), []int32{0, 1, 2}) || !slices.Equal(got("m2"), []int32{3, 4}) {
		t.Fatalf("m1 %v m2 %v", got("m1"), got("m2"))
	}
}

// Whatever members join, leave, expire and heartbeat in whatever order, no
// partition is ever owned by two members, and once everyone heartbeats
// the group is Stable with every partition assigned.
func TestRandomChurnKeepsOwnershipExclusiveAndConverges(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		g := newTestConsumerGroup(100)
		view := testView(TopicMeta{"x", tid(1), 7}, TopicMeta{"y", tid(2), 3})
		clients := map[string]*client{}
		now := int64(0)
		for step := 0; step < 300; step++ {
			now += 10
			ids := slices.Sorted(func(yield func(string) bool) {
				for id := range clients {
					if !yield(id) {
						return
					}
				}
			})
			switch op := rng.Intn(10); {
			case op == 0 && len(clients) < 6:
				c := &client{id: fmt.Sprintf("c%d", step)}
				if seed%2 == 0 {
					c.assignor = AssignorRange
				}
				clients[c.id] = c
				topics := []string{"x", "y"}
				if rng.Intn(3) == 0 {
					topics = []string{"x"}
				}
				c.join(t, g, now, view, topics...)
			case op == 1 && len(ids) > 0:
				id := ids[rng.Intn(len(ids))]
				g.heartbeat(now, view, &ConsumerHeartbeat{MemberID: id, MemberEpoch: -1})
				delete(clients, id)
			case len(ids) > 0:
				c := clients[ids[rng.Intn(len(ids))]]
				if r := c.hbHeld(g, now, view, rng.Intn(2) == 0); r.Err != nil {
					t.Fatalf("seed %d step %d: %s heartbeat: %v", seed, step, c.id, r.Err)
				}
			}
			checkExclusive(t, g)
			// What members really consume never overlaps either.
			held := map[TopicPartitionID]string{}
			for _, c := range clients {
				for tp := range c.held {
					if o, ok := held[tp]; ok {
						t.Fatalf("seed %d step %d: %v consumed by %s and %s", seed, step, tp, o, c.id)
					}
					held[tp] = c.id
				}
			}
		}
		for range 10 {
			for _, c := range clients {
				c.hbHeld(g, now, view, false)
			}
		}
		checkExclusive(t, g)
		if len(clients) == 0 {
			continue
		}
		want := 7
		for _, m := range g.members {
			if slices.Contains(m.topics, "y") {
				want = 10
			}
		}
		if g.state != ConsumerStable || len(g.owners) != want {
			t.Fatalf("seed %d: state %v, %d partitions owned, want %d", seed, g.state, len(g.owners), want)
		}
		for _, c := range clients {
			if c.epoch != g.groupEpoch || count(c.owned) != len(g.members[c.id].assigned) {
				t.Fatalf("seed %d: %s at epoch %d owns %v, group epoch %d", seed, c.id, c.epoch, c.owned, g.groupEpoch)
			}
		}
	}
}

package share

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

// The membership state machine of ShareGroupHeartbeat (KIP-932), driven
// with explicit times.

const sessionMs = 45000

func topicsOf(m map[string]int32) TopicPartitions {
	return func(t string) (int32, bool) {
		n, ok := m[t]
		return n, ok
	}
}

func hb(g *Group, now int64, member string, epoch int32, subs []string, topics TopicPartitions) HeartbeatResult {
	return g.Heartbeat(now, HeartbeatRequest{MemberID: member, MemberEpoch: epoch, Subscribed: subs}, topics, sessionMs, 10)
}

func TestJoinAssignsEveryPartitionOfTheSubscription(t *testing.T) {
	g := NewGroup("g")
	topics := topicsOf(map[string]int32{"a": 3, "b": 1, "c": 2})
	r := hb(g, 0, "m1", 0, []string{"b", "a", "missing"}, topics)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := map[string][]int32{"a": {0, 1, 2}, "b": {0}}
	if !maps.EqualFunc(r.Assignment, want, slices.Equal) {
		t.Fatalf("assignment %v, want %v", r.Assignment, want)
	}
	if r.MemberEpoch != g.Epoch || r.MemberEpoch <= 0 {
		t.Fatalf("member epoch %d, group epoch %d", r.MemberEpoch, g.Epoch)
	}
	// A second member gets the same partitions: share groups share them.
	r2 := hb(g, 0, "m2", 0, []string{"a"}, topics)
	if !maps.EqualFunc(r2.Assignment, map[string][]int32{"a": {0, 1, 2}}, slices.Equal) {
		t.Fatalf("second member's assignment %v", r2.Assignment)
	}
	if g.State() != "Stable" || len(g.Members()) != 2 {
		t.Fatalf("state %s with %d members", g.State(), len(g.Members()))
	}
}

func TestHeartbeatEpochs(t *testing.T) {
	g := NewGroup("g")
	topics := topicsOf(map[string]int32{"a": 1})
	e1 := hb(g, 0, "m1", 0, []string{"a"}, topics).MemberEpoch

	// A plain heartbeat at the current epoch keeps it and carries no
	// assignment.
	r := hb(g, 1, "m1", e1, nil, topics)
	if r.Err != nil || r.MemberEpoch != e1 || r.Assignment != nil {
		t.Fatalf("heartbeat: %+v", r)
	}
	// Another member joining moves the group epoch; m1 catches up on its
	// next heartbeat and is told its (unchanged) assignment again.
	hb(g, 2, "m2", 0, []string{"a"}, topics)
	r = hb(g, 3, "m1", e1, nil, topics)
	if r.Err != nil || r.MemberEpoch != g.Epoch || r.MemberEpoch == e1 || r.Assignment == nil {
		t.Fatalf("catch-up heartbeat: %+v (group epoch %d)", r, g.Epoch)
	}
	e2 := r.MemberEpoch
	// The previous epoch is still accepted (the response that moved it
	// may have been lost) ...
	if r := hb(g, 4, "m1", e1, nil, topics); r.Err != nil {
		t.Fatalf("previous epoch refused: %v", r.Err)
	}
	// ... anything else is fenced.
	if r := hb(g, 5, "m1", e2+5, nil, topics); !errors.Is(r.Err, ErrFencedMemberEpoch) {
		t.Fatalf("future epoch: %v, want ErrFencedMemberEpoch", r.Err)
	}
	if r := hb(g, 5, "nobody", 3, nil, topics); !errors.Is(r.Err, ErrUnknownMember) {
		t.Fatalf("unknown member: %v, want ErrUnknownMember", r.Err)
	}
}

func TestNewTopicPartitionsReachTheAssignment(t *testing.T) {
	g := NewGroup("g")
	parts := map[string]int32{}
	topics := topicsOf(parts)
	r := hb(g, 0, "m1", 0, []string{"a"}, topics)
	if len(r.Assignment) != 0 {
		t.Fatalf("assignment %v before the topic exists", r.Assignment)
	}
	parts["a"] = 2
	r = hb(g, 1, "m1", r.MemberEpoch, nil, topics)
	if !maps.EqualFunc(r.Assignment, map[string][]int32{"a": {0, 1}}, slices.Equal) {
		t.Fatalf("assignment %v after the topic appeared", r.Assignment)
	}
}

func TestLeaveAndSessionExpiry(t *testing.T) {
	g := NewGroup("g")
	topics := topicsOf(map[string]int32{"a": 1})
	e := hb(g, 0, "m1", 0, []string{"a"}, topics).MemberEpoch
	hb(g, 0, "m2", 0, []string{"a"}, topics)

	if r := hb(g, 1, "m1", -1, nil, topics); r.Err != nil || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if r := hb(g, 2, "m1", e, nil, topics); !errors.Is(r.Err, ErrUnknownMember) {
		t.Fatalf("heartbeat after leaving: %v, want ErrUnknownMember", r.Err)
	}
	// m2 last heartbeated at 0: it expires at the sessionMs timeout, not
	// before.
	if gone := g.Expire(sessionMs - 1); len(gone) != 0 {
		t.Fatalf("expired early: %v", gone)
	}
	if gone := g.Expire(sessionMs); !slices.Equal(gone, []string{"m2"}) {
		t.Fatalf("expired %v, want [m2]", gone)
	}
	if g.State() != "Empty" || !g.Empty() {
		t.Fatalf("state %s after everyone left", g.State())
	}
}

func TestHeartbeatKeepsTheSessionAlive(t *testing.T) {
	g := NewGroup("g")
	topics := topicsOf(map[string]int32{"a": 1})
	e := hb(g, 0, "m1", 0, []string{"a"}, topics).MemberEpoch
	hb(g, sessionMs-1, "m1", e, nil, topics)
	if gone := g.Expire(sessionMs + 1); len(gone) != 0 {
		t.Fatalf("expired %v despite a heartbeat", gone)
	}
}

func TestHeartbeatValidation(t *testing.T) {
	g := NewGroup("g")
	topics := topicsOf(nil)
	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want error
	}{
		{"empty member id", HeartbeatRequest{MemberEpoch: 0, Subscribed: []string{}}, ErrInvalidRequest},
		{"join without subscriptions", HeartbeatRequest{MemberID: "m", MemberEpoch: 0}, ErrInvalidRequest},
		{"negative epoch", HeartbeatRequest{MemberID: "m", MemberEpoch: -2}, ErrInvalidRequest},
		{"leave unknown", HeartbeatRequest{MemberID: "m", MemberEpoch: -1}, ErrUnknownMember},
	} {
		if r := g.Heartbeat(0, tc.req, topics, sessionMs, 10); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, r.Err, tc.want)
		}
	}
	full := NewGroup("full")
	hb(full, 0, "m1", 0, []string{}, topics)
	if r := full.Heartbeat(0, HeartbeatRequest{MemberID: "m2", Subscribed: []string{}}, topics, sessionMs, 1); !errors.Is(r.Err, ErrGroupMaxSize) {
		t.Fatalf("over max size: %v", r.Err)
	}
}

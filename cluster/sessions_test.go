package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func sessionImage(fenced map[int32]bool, ids ...int32) *Image {
	im := &Image{Brokers: map[int32]BrokerInfo{}}
	for _, id := range ids {
		im.Brokers[id] = BrokerInfo{NodeID: id, Fenced: fenced[id]}
	}
	return im
}

// A broker silent for longer than the session timeout expires; one heard
// from in time, or fenced already, does not.
func TestSessionExpiresAfterTheTimeout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSessions(9 * time.Second)
	im := sessionImage(map[int32]bool{3: true}, 1, 2, 3)
	if got := s.Expired(im, t0, 1); len(got) != 0 {
		t.Fatalf("expired at the start of the leadership: %v", got)
	}
	s.Seen(1, t0.Add(5*time.Second))
	if got := s.Expired(im, t0.Add(9*time.Second), 1); len(got) != 0 {
		t.Fatalf("expired at exactly the timeout: %v", got)
	}
	if got := s.Expired(im, t0.Add(10*time.Second), 1); !slices.Equal(got, []int32{2}) {
		t.Fatalf("expired %v at t0+10s, want [2] (1 heartbeated at t0+5s, 3 is fenced)", got)
	}
	if got := s.Expired(im, t0.Add(15*time.Second), 1); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("expired %v at t0+15s, want [1 2]", got)
	}
}

// A broker's session is alive from when it was last heard from until the
// timeout has passed; one never heard from has none (a new run of it may
// register).
func TestSessionAliveUntilTheTimeout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSessions(9 * time.Second)
	if s.Alive(1, t0) {
		t.Fatal("broker never heard from has a live session")
	}
	s.Seen(1, t0)
	if !s.Alive(1, t0.Add(8*time.Second)) {
		t.Fatal("session not alive within the timeout")
	}
	if s.Alive(1, t0.Add(9*time.Second)) {
		t.Fatal("session alive at the timeout")
	}
}

// A controller that takes over gives every broker a full session, and a
// broker registered since the last check starts its session at the check.
func TestSessionsStartAfreshOnANewLeadership(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSessions(9 * time.Second)
	im := sessionImage(nil, 1, 2)
	s.Expired(im, t0, 1)
	s.Resign()
	if got := s.Expired(im, t0.Add(time.Minute), 1); len(got) != 0 {
		t.Fatalf("expired on taking over: %v", got)
	}
	im = sessionImage(nil, 1, 2, 4)
	if got := s.Expired(im, t0.Add(time.Minute+5*time.Second), 1); len(got) != 0 {
		t.Fatalf("expired %v five seconds into the new leadership", got)
	}
	if got := s.Expired(im, t0.Add(time.Minute+10*time.Second), 1); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("expired %v, want [1 2] (4 started its session five seconds later)", got)
	}
}

// A node that loses the leadership and wins it back before its next
// check (no Resign in between) leads in a new term, in which the
// brokers heartbeated to another controller: every session starts
// afresh rather than expiring by the heartbeats of the old term.
func TestSessionsStartAfreshWhenTheLeadershipComesBackInANewTerm(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSessions(9 * time.Second)
	im := sessionImage(nil, 1, 2)
	s.Expired(im, t0, 4)
	if got := s.Expired(im, t0.Add(time.Minute), 6); len(got) != 0 {
		t.Fatalf("expired %v on leading again in a later term", got)
	}
	if got := s.Expired(im, t0.Add(time.Minute+10*time.Second), 6); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("expired %v ten seconds into the new term, want [1 2]", got)
	}
}

// The controller measures sessions with its clock: a broker silent past
// broker.session.timeout.ms by that clock is fenced and its leaderships
// move, with no real time passing.
func TestControllerFencesExpiredSessionsByItsClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	cfg := testConfig()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, id := range []int32{1, 2} {
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Incarnation: newIncarnation()}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 1}}})
	c.checkSessions()
	advance(c.qc.SessionTimeout / 2)
	if _, _, err := c.BrokerHeartbeat(ctx, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	advance(c.qc.SessionTimeout/2 + time.Second)
	c.checkSessions()
	im := c.Image()
	if !im.Brokers[2].Fenced || im.Brokers[1].Fenced {
		t.Fatalf("fenced: 1 %v, 2 %v; want only 2, silent past its session", im.Brokers[1].Fenced, im.Brokers[2].Fenced)
	}
	if p := im.Partition("t", 0); p.Leader != 1 {
		t.Fatalf("leader %d after its broker's session expired, want 1", p.Leader)
	}
}

// The controller's session check sleeps until the first broker session can
// expire by the controller's clock, instead of polling: woken then, it
// fences the silent broker; a heartbeat moves the next check later.
func TestControllerSessionCheckDueWhenTheFirstSessionCanExpire(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	cfg := testConfig()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	timeout := c.qc.SessionTimeout
	if got, want := c.nextLeaderCheck(), timeout+time.Millisecond; got != want {
		t.Fatalf("next check in %v with no broker, want when a session started now can expire, %v", got, want)
	}
	for _, id := range []int32{1, 2} {
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Incarnation: newIncarnation()}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.checkSessions()
	if got, want := c.nextLeaderCheck(), timeout+time.Millisecond; got != want {
		t.Fatalf("next check in %v, want when both sessions can expire, %v", got, want)
	}
	advance(4 * time.Second)
	if _, _, err := c.BrokerHeartbeat(ctx, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	due := c.nextLeaderCheck()
	if want := timeout + time.Millisecond - 4*time.Second; due != want {
		t.Fatalf("next check in %v, want when broker 2's session can expire, %v", due, want)
	}
	advance(due - 2*time.Millisecond)
	c.checkSessions()
	if c.Image().Brokers[2].Fenced {
		t.Fatal("broker 2 fenced before its session expired")
	}
	advance(2 * time.Millisecond)
	c.checkSessions()
	if im := c.Image(); !im.Brokers[2].Fenced || im.Brokers[1].Fenced {
		t.Fatalf("fenced: 1 %v, 2 %v; want only 2 at its check", im.Brokers[1].Fenced, im.Brokers[2].Fenced)
	}
	if got, want := c.nextLeaderCheck(), 4*time.Second; got != want {
		t.Fatalf("next check in %v, want when broker 1's session can expire, %v", got, want)
	}
}

package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// openQuorumOf opens a fresh quorum of n voters in this process, with qc's
// timeouts, and returns its controllers in id order, closed when the test
// ends.
func openQuorumOf(t *testing.T, ctx context.Context, n int32, qc QuorumConfig) []*Controller {
	t.Helper()
	voters := freeVoters(t, n)
	type opened struct {
		id  int32
		c   *Controller
		err error
	}
	results := make(chan opened, len(voters))
	for _, v := range voters {
		cfg := testConfig()
		cfg.NodeID = v.ID
		q := qc
		q.Voters, q.BindAddr, q.Dir = voters, v.Addr, t.TempDir()
		go func() {
			c, err := Open(ctx, cfg, q, zerolog.Nop())
			results <- opened{v.ID, c, err}
		}()
	}
	ctrls := make([]*Controller, len(voters))
	var firstErr error
	for range voters {
		r := <-results
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		if r.c != nil {
			ctrls[r.id-1] = r.c
			t.Cleanup(func() { r.c.Close() })
		}
	}
	if firstErr != nil {
		t.Fatalf("opening a voter of a fresh quorum: %v", firstErr)
	}
	return ctrls
}

// A follower applies a committed proposal without waiting for raft's
// commit timeout, far longer here than the test may take: the leader tells
// the followers the commit index as soon as the proposal is applied. The
// voters' start-up, which waits until each has applied the cluster's id,
// depends on it too.
func TestQuorum_FollowersApplyProposalWithoutWaitingCommitTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctrls := openQuorumOf(t, ctx, 3, QuorumConfig{SessionTimeout: time.Hour, ElectionTimeout: time.Minute, commitTimeout: time.Hour})
	leader := awaitQuorumLeader(t, ctx, ctrls)
	cmd := &Command{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "1234"}}
	if err := leader.log.Propose(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	for _, c := range ctrls {
		if c == leader {
			continue
		}
		err := c.awaitLocal(ctx, func(im *Image) bool { return im.BrokerConfigs[""]["log.retention.ms"] == "1234" })
		if err != nil {
			t.Fatalf("follower %d never applied the proposal: %v", c.cfg.NodeID, err)
		}
	}
}

// An idle quorum's leader heartbeats each follower every 400-800 ms and
// repeats the commit index every 2-4 s (Kafka's cadence: a KRaft voter
// fetches every 500 ms when idle, and elects after 2 s without the
// leader), not every 50-100 ms; and its lease spans at least two
// heartbeat intervals, so that a leader starved of CPU does not step down
// (a lease shorter than the heartbeat interval made a loaded leader
// resign). Raft accepts the start-up configuration, its lowering, and a
// leader's.
func TestQuorumTimings_KafkaCadenceWithLeaseOverSeveralHeartbeats(t *testing.T) {
	qc := QuorumConfig{Voters: []Voter{{1, "a:1"}, {2, "b:1"}, {3, "c:1"}}}
	tm := quorumTimings(qc)
	if tm.heartbeat != 2*time.Second {
		t.Errorf("heartbeat timeout %v, want controller.quorum.fetch.timeout.ms's default 2s", tm.heartbeat)
	}
	leaderHeartbeat, _ := tm.of(raft.Leader)
	minInterval, maxInterval := leaderHeartbeat/10, leaderHeartbeat/5 // raft's heartbeat()
	if minInterval < 400*time.Millisecond {
		t.Errorf("heartbeats every %v at the least, want no more often than 400 ms", minInterval)
	}
	if tm.commit < 2*time.Second {
		t.Errorf("commit timeout %v, want at least 2s", tm.commit)
	}
	if tm.lease < 2*maxInterval {
		t.Errorf("lease %v spans fewer than two heartbeat intervals of up to %v", tm.lease, maxInterval)
	}
	qc.FetchTimeout = 5 * time.Second
	qc.ElectionTimeout = 10 * time.Second
	if tm := quorumTimings(qc); tm.heartbeat != 5*time.Second || tm.election != 10*time.Second || tm.lease != 5*time.Second {
		t.Errorf("with fetch timeout 5s and election timeout 10s: %+v", tm)
	}
	for _, q := range []QuorumConfig{qc, {}} {
		tm := quorumTimings(q)
		rc := raft.DefaultConfig()
		rc.LocalID = "1"
		tm.start(rc)
		if err := raft.ValidateConfig(rc); err != nil {
			t.Errorf("start-up configuration %+v: %v", tm, err)
		}
		rc.HeartbeatTimeout, rc.ElectionTimeout = tm.of(raft.Follower) // electNow
		if err := raft.ValidateConfig(rc); err != nil {
			t.Errorf("configuration after electNow %+v: %v", tm, err)
		}
		rc.HeartbeatTimeout, rc.ElectionTimeout = tm.of(raft.Leader) // paceHeartbeats on a leader
		if err := raft.ValidateConfig(rc); err != nil {
			t.Errorf("a leader's configuration %+v: %v", tm, err)
		}
	}
}

// awaitQuorumLeader waits until one of ctrls leads the quorum, and
// returns it.
func awaitQuorumLeader(t *testing.T, ctx context.Context, ctrls []*Controller) *Controller {
	t.Helper()
	for {
		for _, c := range ctrls {
			if c.IsLeader() {
				return c
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(time.Millisecond)
	}
}

// A quorum's leader runs with the leader's heartbeat timeout (heartbeats
// half as often) and every other voter with controller.quorum.fetch
// .timeout.ms, its election timer; when the leadership moves, the new
// leader slows its heartbeats and the old one takes up the follower's
// timeout again.
func TestQuorum_LeaderHeartbeatsAtItsOwnPaceFollowersKeepTheFetchTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc := QuorumConfig{SessionTimeout: time.Hour}
	ctrls := openQuorumOf(t, ctx, 3, qc)
	tm := quorumTimings(QuorumConfig{Voters: []Voter{{1, "a:1"}, {2, "b:1"}, {3, "c:1"}}})
	leaderHeartbeat, _ := tm.of(raft.Leader)
	if leaderHeartbeat <= tm.heartbeat {
		t.Fatalf("leader heartbeat timeout %v, follower's %v: want the leader's longer", leaderHeartbeat, tm.heartbeat)
	}
	awaitPaced := func(leader *Controller) {
		t.Helper()
		for {
			ok := true
			for _, c := range ctrls {
				want := tm.heartbeat
				if c == leader {
					want = leaderHeartbeat
				}
				if c.log.(*raftLog).r.ReloadableConfig().HeartbeatTimeout != want {
					ok = false
				}
			}
			if ok {
				return
			}
			if ctx.Err() != nil {
				for _, c := range ctrls {
					t.Logf("node %d leader=%v heartbeat timeout %v", c.cfg.NodeID, c == leader, c.log.(*raftLog).r.ReloadableConfig().HeartbeatTimeout)
				}
				t.Fatal("heartbeat timeouts never matched the roles")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	first := awaitQuorumLeader(t, ctx, ctrls)
	awaitPaced(first)
	if err := first.log.(*raftLog).r.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	var next *Controller
	for next == nil || next == first {
		if ctx.Err() != nil {
			t.Fatal("no new leader")
		}
		time.Sleep(5 * time.Millisecond)
		next = nil
		for _, c := range ctrls {
			if c.IsLeader() {
				next = c
			}
		}
	}
	awaitPaced(next)
}

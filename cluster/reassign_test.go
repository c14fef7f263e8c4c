package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Partition reassignment (KIP-455) and leader elections (KIP-460) on the
// real Controller over the in-memory log.

// memCluster opens an in-memory controller with brokers 1..n registered
// and unfenced.
func memCluster(t *testing.T, cfg Config, n int32) *Controller {
	t.Helper()
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for id := int32(1); id <= n; id++ {
		registerLive(t, c, id)
	}
	return c
}

func registerLive(t *testing.T, c *Controller, id int32) {
	t.Helper()
	ctx := context.Background()
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Incarnation: newIncarnation()}); err != nil {
		t.Fatal(err)
	}
	if fenced, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil || fenced {
		t.Fatalf("unfence %d: fenced %v, %v", id, fenced, err)
	}
}

func reassign(t *testing.T, c *Controller, topic string, p int32, replicas []int32) error {
	t.Helper()
	errs := c.AlterPartitionReassignments(context.Background(), []Reassignment{{Topic: topic, Partition: p, Replicas: replicas}})
	if len(errs) != 1 {
		t.Fatalf("%d results for one partition", len(errs))
	}
	return errs[0]
}

// expandISR sends the leader's AlterPartition adding isr's members, as a
// leader does once they have caught up.
func expandISR(t *testing.T, c *Controller, topic string, p int32, isr []int32) (PartitionInfo, error) {
	t.Helper()
	cur := *c.Image().Partition(topic, p)
	return c.AlterPartition(context.Background(), AlterPartitionRequest{BrokerID: cur.Leader, Topic: topic, Partition: p,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: isr})
}

func TestReassignmentAddsTargetThenCompletesWhenItJoinsTheISRMovingARemovedLeader(t *testing.T) {
	c := memCluster(t, testConfig(), 4)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	before := *c.Image().Partition("t", 0)

	if err := reassign(t, c, "t", 0, []int32{2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	// Replicas are the target, then the replicas being removed; the
	// leader and ISR stay until the new replica has caught up.
	if !slices.Equal(p.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{1}) ||
		p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2, 3}) || p.PartitionEpoch != before.PartitionEpoch+1 || p.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("reassigning: %+v", p)
	}
	if got := c.Image().Reassignments(nil); len(got) != 1 || got[0].Topic != "t" || !slices.Equal(got[0].AddingReplicas, []int32{4}) {
		t.Fatalf("listed %+v", got)
	}

	// The leader adds 4 to the ISR: every target replica is in it, so the
	// reassignment completes and 1, being removed, hands its leadership
	// to the first target replica in the ISR.
	_, err := expandISR(t, c, "t", 0, []int32{1, 2, 3, 4})
	if !errors.Is(err, ErrNewLeaderElected) {
		t.Fatalf("AlterPartition completing the move away from its leader: %v, want NEW_LEADER_ELECTED", err)
	}
	q := *c.Image().Partition("t", 0)
	if !slices.Equal(q.Replicas, []int32{2, 3, 4}) || q.Reassigning() || !slices.Equal(q.ISR, []int32{2, 3, 4}) ||
		q.Leader != 2 || q.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("completed: %+v, want replicas and ISR [2 3 4] led by 2 at a new epoch", q)
	}
	if got := c.Image().Reassignments(nil); len(got) != 0 {
		t.Fatalf("still listed %+v", got)
	}
}

func TestReassignmentKeepingItsLeaderCompletesWithoutAnElection(t *testing.T) {
	c := memCluster(t, testConfig(), 4)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	if err := reassign(t, c, "t", 0, []int32{1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	// An ISR change that does not yet hold every target replica leaves
	// it in progress.
	if _, err := expandISR(t, c, "t", 0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("t", 0); !p.Reassigning() || !slices.Equal(p.Replicas, []int32{1, 2, 4, 3}) {
		t.Fatalf("after an ISR shrink: %+v, want the reassignment still in progress", p)
	}
	before := *c.Image().Partition("t", 0)
	q, err := expandISR(t, c, "t", 0, []int32{1, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Replicas, []int32{1, 2, 4}) || q.Reassigning() || q.Leader != 1 || !slices.Equal(c.Image().Partition("t", 0).Replicas, []int32{1, 2, 4}) {
		t.Fatalf("completed: %+v", q)
	}
	// 3 was removed: the leader epoch moves on although 1 still leads.
	if q.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("leader epoch %d after removing a replica, want %d", q.LeaderEpoch, before.LeaderEpoch+1)
	}
}

func TestReassignmentCancelThatWouldLeaveNoLeaderNeedsUncleanElection(t *testing.T) {
	ctx := context.Background()
	for _, unclean := range []bool{false, true} {
		c := memCluster(t, testConfig(), 3)
		spec := TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1}}}
		if unclean {
			spec.Configs = map[string]*string{"unclean.leader.election.enable": str("true")}
		}
		mustCreate(t, c, spec)
		if err := reassign(t, c, "t", 0, []int32{2, 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := expandISR(t, c, "t", 0, []int32{1, 2}); err != nil {
			t.Fatal(err)
		}
		// 1, the only original replica, fails: 2 leads, and the ISR
		// holds no original replica.
		if _, _, err := c.BrokerHeartbeat(ctx, 1, true, nil); err != nil {
			t.Fatal(err)
		}
		registerLive(t, c, 1)
		if p := c.Image().Partition("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
			t.Fatalf("before cancelling: %+v", p)
		}
		err := reassign(t, c, "t", 0, nil)
		p := *c.Image().Partition("t", 0)
		if !unclean {
			if !errors.Is(err, ErrInvalidReplicaAssignment) || !p.Reassigning() || p.Leader != 2 {
				t.Fatalf("cancel with no original replica in the ISR: %v, %+v; want it refused", err, p)
			}
			continue
		}
		if err != nil || p.Reassigning() || !slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
			t.Fatalf("unclean cancel: %v, %+v; want 1 leading its replicas again", err, p)
		}
	}
}

func TestReassignmentWithinTheISRCompletesAtOnce(t *testing.T) {
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	if err := reassign(t, c, "t", 0, []int32{3, 2}); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	if !slices.Equal(p.Replicas, []int32{3, 2}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{3, 2}) || p.Leader != 3 {
		t.Fatalf("%+v, want replicas [3 2] led by 3 at once", p)
	}
	// The same replicas again change nothing.
	if err := reassign(t, c, "t", 0, []int32{3, 2}); err != nil {
		t.Fatal(err)
	}
	if q := *c.Image().Partition("t", 0); q.PartitionEpoch != p.PartitionEpoch {
		t.Fatalf("a no-op reassignment changed the record: %+v", q)
	}
}

func TestReassignmentCancelRevertsToTheOriginalReplicas(t *testing.T) {
	c := memCluster(t, testConfig(), 6)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	if err := reassign(t, c, "t", 0, []int32{4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if _, err := expandISR(t, c, "t", 0, []int32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := reassign(t, c, "t", 0, nil); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	if !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 2, 3}) || p.Leader != 1 {
		t.Fatalf("cancelled: %+v, want replicas and ISR [1 2 3] led by 1", p)
	}
	if err := reassign(t, c, "t", 0, nil); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("second cancel: %v, want NO_REASSIGNMENT_IN_PROGRESS", err)
	}
}

func TestReassignmentReplacingOneInProgressStartsFromTheOriginalReplicas(t *testing.T) {
	c := memCluster(t, testConfig(), 5)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	if err := reassign(t, c, "t", 0, []int32{1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	if err := reassign(t, c, "t", 0, []int32{1, 2, 5}); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	// 4, which may have fetched a part, is removed like 3.
	if !slices.Equal(p.Replicas, []int32{1, 2, 5, 4, 3}) || !slices.Equal(p.AddingReplicas, []int32{5}) || !slices.Equal(p.RemovingReplicas, []int32{4, 3}) {
		t.Fatalf("%+v", p)
	}
	if _, err := expandISR(t, c, "t", 0, []int32{1, 2, 3, 5}); err != nil {
		t.Fatal(err)
	}
	if q := *c.Image().Partition("t", 0); !slices.Equal(q.Replicas, []int32{1, 2, 5}) || q.Reassigning() {
		t.Fatalf("%+v", q)
	}
}

func TestReassignmentRefusals(t *testing.T) {
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	for _, tc := range []struct {
		name     string
		topic    string
		p        int32
		replicas []int32
		want     error
	}{
		{"unknown topic", "nope", 0, []int32{1}, ErrUnknownTopic},
		{"unknown partition", "t", 5, []int32{1}, ErrUnknownTopic},
		{"empty list", "t", 0, []int32{}, ErrInvalidReplicaAssignment},
		{"duplicate", "t", 0, []int32{1, 1}, ErrInvalidReplicaAssignment},
		{"unregistered broker", "t", 0, []int32{1, 9}, ErrInvalidReplicaAssignment},
		{"cancel without one", "t", 0, nil, ErrNoReassignmentInProgress},
	} {
		if err := reassign(t, c, tc.topic, tc.p, tc.replicas); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// One refusal does not fail the others of the request.
	errs := c.AlterPartitionReassignments(context.Background(), []Reassignment{{Topic: "t", Partition: 0, Replicas: []int32{9}}, {Topic: "t", Partition: 0, Replicas: []int32{2, 3}}})
	if !errors.Is(errs[0], ErrInvalidReplicaAssignment) || errs[1] != nil {
		t.Fatalf("errs %v", errs)
	}
}

// The reassignment lives in the partition record, so a controller that
// takes over (here: the quorum reopened from its log) completes it from
// the leader's next AlterPartition.
func TestReassignmentContinuesAfterControllerFailover(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	c := openQuorum(t, cfg, dir)
	for id := int32(1); id <= 3; id++ {
		registerLive(t, c, id)
	}
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	if err := reassign(t, c, "t", 0, []int32{1, 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r := openQuorum(t, cfg, dir)
	if got := r.Image().Reassignments(nil); len(got) != 1 || !slices.Equal(got[0].AddingReplicas, []int32{3}) || !slices.Equal(got[0].RemovingReplicas, []int32{2}) {
		t.Fatalf("after failover: %+v", got)
	}
	if _, err := expandISR(t, r, "t", 0, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if p := r.Image().Partition("t", 0); !slices.Equal(p.Replicas, []int32{1, 3}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 3}) {
		t.Fatalf("completed by the new controller: %+v", p)
	}
}

func electOne(t *testing.T, c *Controller, typ ElectionType, topic string, p int32) error {
	t.Helper()
	res, err := c.ElectLeaders(context.Background(), typ, map[string][]int32{topic: {p}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Topic != topic || res[0].Partition != p {
		t.Fatalf("results %+v", res)
	}
	return res[0].Err
}

func TestPreferredElectionMovesLeadershipBackAfterFailover(t *testing.T) {
	ctx := context.Background()
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}})
	if err := electOne(t, c, ElectPreferred, "t", 0); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("preferred leader leading: %v, want ELECTION_NOT_NEEDED", err)
	}
	// 1 fails over: 2 leads partition 0.
	if _, _, err := c.BrokerHeartbeat(ctx, 1, true, nil); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("t", 0); p.Leader != 2 {
		t.Fatalf("leader %d after fencing 1", p.Leader)
	}
	if err := electOne(t, c, ElectPreferred, "t", 0); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("fenced preferred leader: %v, want PREFERRED_LEADER_NOT_AVAILABLE", err)
	}
	// Back, but not yet in the ISR.
	registerLive(t, c, 1)
	if err := electOne(t, c, ElectPreferred, "t", 0); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred leader out of the ISR: %v, want PREFERRED_LEADER_NOT_AVAILABLE", err)
	}
	if _, err := expandISR(t, c, "t", 0, []int32{2, 3, 1}); err != nil {
		t.Fatal(err)
	}
	before := *c.Image().Partition("t", 0)
	// Every partition: only those an election was tried for answer.
	res, err := c.ElectLeaders(ctx, ElectPreferred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Topic != "t" || res[0].Partition != 0 || res[0].Err != nil {
		t.Fatalf("elect all: %+v, want partition 0 alone, elected", res)
	}
	p := *c.Image().Partition("t", 0)
	if p.Leader != 1 || p.LeaderEpoch != before.LeaderEpoch+1 || p.PartitionEpoch != before.PartitionEpoch+1 {
		t.Fatalf("after the preferred election: %+v", p)
	}
	if err := electOne(t, c, ElectPreferred, "nope", 0); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}

func TestUncleanElectionElectsAnyLiveReplicaOnlyForALeaderlessPartition(t *testing.T) {
	ctx := context.Background()
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	if err := electOne(t, c, ElectUnclean, "t", 0); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("unclean election with a leader: %v, want ELECTION_NOT_NEEDED", err)
	}
	// 1 alone in the ISR, then gone: the partition is offline, and 2 and
	// 3, never in the ISR or ELR since, may lead only uncleanly.
	if _, err := expandISR(t, c, "t", 0, []int32{1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 1, true, nil); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("t", 0); p.Leader != -1 {
		t.Fatalf("leader %d, want offline", p.Leader)
	}
	// The preferred replica is fenced: no preferred election.
	if err := electOne(t, c, ElectPreferred, "t", 0); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred: %v", err)
	}
	if err := electOne(t, c, ElectUnclean, "t", 0); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.ELR != nil || p.LastKnownELR != nil {
		t.Fatalf("after the unclean election: %+v, want 2 leading alone", p)
	}
}

func TestUncleanElectionWithNoLiveReplicaIsEligibleLeadersNotAvailable(t *testing.T) {
	ctx := context.Background()
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	for _, id := range []int32{2, 1} {
		if _, _, err := c.BrokerHeartbeat(ctx, id, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := electOne(t, c, ElectUnclean, "t", 0); !errors.Is(err, ErrEligibleLeadersNotAvailable) {
		t.Fatalf("%v, want ELIGIBLE_LEADERS_NOT_AVAILABLE", err)
	}
}

// KIP-966: an unclean election still prefers an eligible leader replica,
// which holds every committed record, over any other live replica.
func TestUncleanElectionPrefersTheELR(t *testing.T) {
	im := electionImage(map[int32]bool{1: true, 2: false, 3: false},
		PartitionInfo{Partition: 0, Leader: -1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{2, 3, 1}, ISR: nil, ELR: []int32{3}})
	next, err := electionChange(im, im.Topics["t"], *im.Partition("t", 0), ElectUnclean, pol(never, 2))
	if err != nil || next.Leader != 3 || !slices.Equal(next.ISR, []int32{3}) {
		t.Fatalf("%+v %v, want 3 from the ELR", next, err)
	}
}

func TestLeaderImbalancePastThePercentageMovesLeadershipsBack(t *testing.T) {
	live := map[int32]bool{1: false, 2: false, 3: false}
	var parts []PartitionInfo
	// Broker 1 is preferred for ten partitions and leads nine (10 %);
	// broker 2 for ten and leads eight (20 %).
	for i := int32(0); i < 20; i++ {
		p := PartitionInfo{Partition: i, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
		if i >= 10 {
			p.Leader, p.Replicas = 2, []int32{2, 3, 1}
		}
		switch i {
		case 0, 10:
			p.Leader = 3
		case 11:
			p.Leader = 3
			p.ISR = []int32{3, 1}
		}
		parts = append(parts, p)
	}
	im := electionImage(live, parts...)
	ch := imbalanceChanges(im, 10)
	// Broker 1 is not past 10 %; broker 2 is, and gets back the partition
	// where it is in the ISR.
	if len(ch) != 1 || ch[0].Next.Partition != 10 || ch[0].Next.Leader != 2 {
		t.Fatalf("changes %+v, want partition 10 back to 2", ch)
	}
	if ch := imbalanceChanges(im, 20); len(ch) != 0 {
		t.Fatalf("at 20 %%: %+v", ch)
	}
}

func TestAutoLeaderRebalanceRunsEveryCheckIntervalByTheControllerClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	cfg := testConfig()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg.AutoLeaderRebalanceEnable = true
	cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	cfg.LeaderImbalancePerBrokerPercentage = 10
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	c := memCluster(t, cfg, 2)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}, {2, 1}}})
	if _, _, err := c.BrokerHeartbeat(ctx, 1, true, nil); err != nil {
		t.Fatal(err)
	}
	registerLive(t, c, 1)
	if _, err := expandISR(t, c, "t", 0, []int32{2, 1}); err != nil {
		t.Fatal(err)
	}
	c.maybeRebalanceLeaders()
	advance(299 * time.Second)
	c.maybeRebalanceLeaders()
	if p := c.Image().Partition("t", 0); p.Leader != 2 {
		t.Fatalf("leader %d before the check interval passed", p.Leader)
	}
	advance(time.Second)
	c.maybeRebalanceLeaders()
	if p := c.Image().Partition("t", 0); p.Leader != 1 {
		t.Fatalf("leader %d after the check interval, want the preferred 1", p.Leader)
	}
}

func TestReplicationThrottleConfigsAreAcceptedAndValidated(t *testing.T) {
	ctx := context.Background()
	c := memCluster(t, testConfig(), 1)
	for _, ok := range []string{"", "*", "0:1,1:2", " 0:1 , 1:2 "} {
		if err := ValidateTopicConfig("follower.replication.throttled.replicas", &ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"0", "a:1", "0:1,*"} {
		if err := ValidateTopicConfig("leader.replication.throttled.replicas", &bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q: %v, want INVALID_CONFIG", bad, err)
		}
	}
	for _, res := range []string{"", "1"} {
		if err := c.SetBrokerConfigs(ctx, res, map[string]string{"follower.replication.throttled.rate": "1048576", "leader.replication.throttled.rate": "1048576"}, false); err != nil {
			t.Fatalf("broker %q: %v", res, err)
		}
	}
	if err := c.SetBrokerConfigs(ctx, "1", map[string]string{"follower.replication.throttled.rate": "-1"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative rate: %v", err)
	}
}

func TestCreatePartitionsDuringAReassignmentKeepsTheTargetReplicationFactor(t *testing.T) {
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	if err := reassign(t, c, "t", 0, []int32{2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(context.Background(), "t", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("t", 1); len(p.Replicas) != 2 {
		t.Fatalf("new partition %+v, want 2 replicas like the topic's", p)
	}
}

package integration

// Changing a running cluster's shape with stock admin clients: partition
// reassignment (KIP-455) under acks=all load, moving partitions to a
// fourth broker, and leadership returning to preferred replicas after a
// failover (ElectLeaders, KIP-460, and auto.leader.rebalance.enable).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// replicasFrom returns node id's view of a partition's replica list.
func (c *cluster) replicasFrom(id int32, topic string, p int32) ([]int32, error) {
	resp, err := c.metadataFrom(id, topic)
	if err != nil {
		return nil, err
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		for _, mp := range mt.Partitions {
			if mp.Partition == p {
				return mp.Replicas, nil
			}
		}
	}
	return nil, fmt.Errorf("node %d: %s[%d] not in metadata", id, topic, p)
}

// reassign asks for the given targets and requires every partition to be
// accepted.
func reassign(t *testing.T, adm *kadm.Client, topic string, targets map[int32][]int32) {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	for p, r := range targets {
		req.Assign(topic, p, r)
	}
	res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil {
				t.Fatalf("reassigning %s[%d]: %v %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
			}
		}
	}
}

// waitReassigned waits until no reassignment of topic is listed and every
// node's metadata shows each partition with its target replicas.
func (c *cluster) waitReassigned(t *testing.T, adm *kadm.Client, topic string, targets map[int32][]int32) {
	t.Helper()
	set := kadm.TopicsSet{}
	for p := range targets {
		set.Add(topic, p)
	}
	eventually(t, 90*time.Second, func() error {
		listed, err := adm.ListPartitionReassignments(testCtx(t, 10*time.Second), set)
		if err != nil {
			return err
		}
		for _, ps := range listed {
			for _, r := range ps {
				return fmt.Errorf("%s[%d] still reassigning: replicas %v adding %v removing %v", r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
			}
		}
		for id := int32(1); id <= int32(len(c.nodes)); id++ {
			for p, want := range targets {
				got, err := c.replicasFrom(id, topic, p)
				if err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("node %d: %s[%d] replicas %v, want %v", id, topic, p, got, want)
				}
			}
		}
		return nil
	})
}

// waitNoPartitionDir waits until node id has deleted its copy of a
// partition it no longer replicates.
func (c *cluster) waitNoPartitionDir(t *testing.T, id int32, topic string, p int32) {
	t.Helper()
	dir := c.node(id).PartitionDir(topic, p)
	eventually(t, 60*time.Second, func() error {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("node %d still has %s (%v)", id, dir, err)
		}
		return nil
	})
}

// TestClusterReassignUnderAcksAllLoadLosesNoRecord moves every partition
// of an RF 2 topic to another pair of brokers while an idempotent acks=all
// producer writes and a consumer reads, and checks the whole history:
// nothing acknowledged is lost or duplicated, offsets never move. The
// replicas a partition left delete their copy.
func TestClusterReassignUnderAcksAllLoadLosesNoRecord(t *testing.T) {
	c := startCluster(t, netEnv)
	const topic, parts = "reassign-load", 3
	c.createTopicAssigned(t, topic, [][]int32{{1, 2}, {2, 3}, {3, 1}})
	h := newHistory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := startHistConsumer(t, c, h, "live", topic, parts)
	idem := startIdemProducer(ctx, t, c, h, topic, parts)
	waitUntil(t, 60*time.Second, "the first acknowledged writes", func() bool { return idem.acked.Load() > 300 })

	adm := c.admin(t)
	targets := map[int32][]int32{0: {3, 2}, 1: {1, 3}, 2: {2, 1}}
	reassign(t, adm, topic, targets)
	c.waitReassigned(t, adm, topic, targets)
	c.waitNoPartitionDir(t, 1, topic, 0)
	c.waitNoPartitionDir(t, 2, topic, 1)
	c.waitNoPartitionDir(t, 3, topic, 2)
	before := idem.acked.Load()
	waitUntil(t, 60*time.Second, "writes acknowledged after the move", func() bool { return idem.acked.Load() > before+300 })

	cancel()
	idem.wait(t)
	ends := writeEndMarks(t, c, h, topic, parts)
	h.final = readCommittedUntil(t, c, topic, parts, ends)
	live.waitEnds(t, ends)
	h.mu.Lock()
	h.ends = ends
	h.mu.Unlock()
	res := h.check()
	t.Logf("reassignment under load: %s", res)
	if !res.ok() {
		for _, e := range res.Examples {
			t.Errorf("  %s", e)
		}
		t.Fatal("the history has anomalies")
	}
}

// TestClusterMovePartitionsToAFourthBroker starts four nodes with a topic
// on the first three (node 4 holds no replica, as a broker just added
// would), moves replicas to node 4 — one of them away from its leader —
// and checks node 4 serves them: it is in their ISR, leads the one whose
// leader left, and a consumer reads every record written before and
// after the move.
func TestClusterMovePartitionsToAFourthBroker(t *testing.T) {
	c := startClusterN(t, 4, nil)
	const topic, parts = "to-node-4", 2
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}, {2, 3, 1}})
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	prod.waitMoreAcks(t, 500, "before the move")

	adm := c.admin(t)
	// Partition 0 loses its leader 1 to 4; partition 1 keeps its leader.
	targets := map[int32][]int32{0: {4, 2, 3}, 1: {2, 3, 4}}
	reassign(t, adm, topic, targets)
	c.waitReassigned(t, adm, topic, targets)
	s := c.waitPartition(t, topic, 0, "node 4 leading partition 0 with a full ISR", func(s partState) bool {
		return s.Leader == 4 && slices.Equal(s.ISR, []int32{2, 3, 4})
	})
	t.Logf("partition 0 after the move: %s", s)
	c.waitPartition(t, topic, 1, "node 4 in partition 1's ISR", func(s partState) bool {
		return s.Leader == 2 && slices.Equal(s.ISR, []int32{2, 3, 4})
	})
	c.waitNoPartitionDir(t, 1, topic, 0)
	c.waitNoPartitionDir(t, 1, topic, 1)
	prod.waitMoreAcks(t, 500, "after the move")
	prod.stop(t)
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)

	// Cancelling when nothing moves is refused as Kafka refuses it.
	var cancelReq kadm.AlterPartitionAssignmentsReq
	cancelReq.CancelAssign(topic, 0)
	res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), cancelReq)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel with no reassignment: %v, want NO_REASSIGNMENT_IN_PROGRESS", r.Err)
	}
}

// TestClusterPreferredLeaderElectionAfterFailover kills the leader of a
// partition with SIGKILL; leadership moves and stays away after the node
// is back, until ElectLeaders (PREFERRED) returns it to the first replica.
func TestClusterPreferredLeaderElectionAfterFailover(t *testing.T) {
	c := startCluster(t, nil)
	const topic = "preferred"
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}})
	c.waitFullISR(t, topic, 0)
	c.node(1).Kill()
	c.waitNewLeader(t, topic, 0, 1)
	c.node(1).Restart()
	s := c.waitFullISR(t, topic, 0)
	if s.Leader == 1 {
		t.Fatalf("leadership returned to 1 by itself: %s", s)
	}
	adm := c.admin(t)
	res, err := adm.ElectLeaders(testCtx(t, 30*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("preferred election: %v %s", r.Err, r.ErrMessage)
	}
	c.waitPartition(t, topic, 0, "the preferred replica 1 leading", func(s partState) bool { return s.Leader == 1 })
	res, err = adm.ElectLeaders(testCtx(t, 30*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v, want ELECTION_NOT_NEEDED", r.Err)
	}
}

// TestClusterAutoLeaderRebalanceAfterFailover is the same failover with
// auto.leader.rebalance.enable checking every second: leadership comes
// back to the preferred replica with no request.
func TestClusterAutoLeaderRebalanceAfterFailover(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": "1"})
	const topic = "auto-rebalance"
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}})
	c.waitFullISR(t, topic, 0)
	c.node(1).Kill()
	c.waitNewLeader(t, topic, 0, 1)
	c.node(1).Restart()
	c.waitPartition(t, topic, 0, "the preferred replica 1 leading again", func(s partState) bool {
		return s.Leader == 1 && len(s.ISR) == 3
	})
}

// alterConfigs applies configs with IncrementalAlterConfigs through kadm,
// to a broker (broker >= 0) or to topic.
func alterConfigs(t *testing.T, adm *kadm.Client, broker int32, topic string, configs ...kadm.AlterConfig) {
	t.Helper()
	var res kadm.AlterConfigsResponses
	var err error
	if topic != "" {
		res, err = adm.AlterTopicConfigs(testCtx(t, 30*time.Second), configs, topic)
	} else {
		res, err = adm.AlterBrokerConfigs(testCtx(t, 30*time.Second), configs, broker)
	}
	if err != nil {
		t.Fatalf("altering configs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("altering configs of %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
}

// TestClusterFollowerThrottleHoldsBackAMoveUntilLifted throttles, through
// IncrementalAlterConfigs, what node 2 may copy for one partition to
// nothing: a move of that partition to node 2 stays in progress while an
// unthrottled one from the same leader completes, producers keep being
// acknowledged, and lifting the throttle lets the move finish.
func TestClusterFollowerThrottleHoldsBackAMoveUntilLifted(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_MIN_INSYNC_REPLICAS": "1"})
	c.createTopicAssigned(t, "held", [][]int32{{1}})
	c.createTopicAssigned(t, "free", [][]int32{{1}})
	adm := c.admin(t)
	for _, topic := range []string{"held", "free"} {
		prod := startSeqProducer(t, seqProducerClient(t, c), topic, 1, 5)
		prod.waitMoreAcks(t, 300, "before the move")
		prod.stop(t)
	}
	alterConfigs(t, adm, 2, "", kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: kadm.StringPtr("0")})
	alterConfigs(t, adm, -1, "held", kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr("0:2")})

	prod := startSeqProducer(t, seqProducerClient(t, c), "held", 1, 5)
	reassign(t, adm, "held", map[int32][]int32{0: {1, 2}})
	reassign(t, adm, "free", map[int32][]int32{0: {1, 2}})
	c.waitReassigned(t, adm, "free", map[int32][]int32{0: {1, 2}})
	listed, err := adm.ListPartitionReassignments(testCtx(t, 10*time.Second), kadm.TopicsSet{"held": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := listed["held"][0]; !ok || !slices.Equal(r.AddingReplicas, []int32{2}) {
		t.Fatalf("held's move is not in progress while throttled to nothing: %+v", listed)
	}
	prod.waitMoreAcks(t, 300, "while the move is held back")

	alterConfigs(t, adm, 2, "", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"})
	c.waitReassigned(t, adm, "held", map[int32][]int32{0: {1, 2}})
	prod.stop(t)
	got := seqRecords(t, c.consumeAll(t, "held", 1), 1)
	if len(got) < 600 {
		t.Fatalf("read %d records back", len(got))
	}
}

// TestClusterReassignmentContinuesAfterControllerFailover holds a move
// back with a follower throttle, kills the active controller with
// SIGKILL, and lifts the throttle through the new controller: the move,
// which lives in the metadata quorum, completes.
func TestClusterReassignmentContinuesAfterControllerFailover(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_MIN_INSYNC_REPLICAS": "1"})
	var ctl int32
	eventually(t, 30*time.Second, func() error {
		var err error
		if ctl, err = c.controller(1); err == nil && ctl < 1 {
			err = fmt.Errorf("no controller yet")
		}
		return err
	})
	others := c.others(ctl)
	from, to := others[0], others[1]
	c.createTopicAssigned(t, "held", [][]int32{{from}})
	adm := c.admin(t)
	prod := startSeqProducer(t, seqProducerClient(t, c), "held", 1, 5)
	prod.waitMoreAcks(t, 300, "before the move")
	alterConfigs(t, adm, to, "", kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: kadm.StringPtr("0")})
	alterConfigs(t, adm, -1, "held", kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr(fmt.Sprintf("0:%d", to))})
	target := map[int32][]int32{0: {from, to}}
	reassign(t, adm, "held", target)

	c.node(ctl).Kill()
	eventually(t, 60*time.Second, func() error {
		now, err := c.controller(from)
		if err == nil && (now < 1 || now == ctl) {
			err = fmt.Errorf("controller still %d", now)
		}
		return err
	})
	listed, err := adm.ListPartitionReassignments(testCtx(t, 30*time.Second), kadm.TopicsSet{"held": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := listed["held"][0]; !ok || !slices.Equal(r.AddingReplicas, []int32{to}) {
		t.Fatalf("after the controller failover the move is not listed: %+v", listed)
	}
	alterConfigs(t, adm, to, "", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"})
	c.node(ctl).Restart()
	c.waitReassigned(t, adm, "held", target)
	prod.waitMoreAcks(t, 300, "after the move")
	prod.stop(t)
	checkAckedPresent(t, prod, seqRecords(t, c.consumeAll(t, "held", 1), 1))
}

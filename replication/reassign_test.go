package replication_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// Partition reassignment (KIP-455) as the brokers carry it out: the new
// replica gets a log and copies the partition, joins the ISR, the
// controller completes the move, and the replica that left drops its log.

func (c *simCluster) reassign(topic string, replicas ...int32) {
	c.t.Helper()
	errs := c.ctrl.AlterPartitionReassignments(context.Background(), []cluster.Reassignment{{Topic: topic, Partition: 0, Replicas: replicas}})
	if errs[0] != nil {
		c.t.Fatalf("reassign %s to %v: %v", topic, replicas, errs[0])
	}
}

func (c *simCluster) waitReassigned(topic string, replicas ...int32) {
	c.t.Helper()
	eventually(c.t, "the reassignment of "+topic+" completed", func() bool {
		pi := c.partitionInfo(topic)
		return !pi.Reassigning() && slices.Equal(pi.Replicas, replicas)
	})
}

func (n *simNode) hosts(topic string) bool {
	tp := partition.TopicPartition{Topic: topic, Partition: 0}
	return n.rm.Get(tp) != nil || slices.Contains(n.logs.Partitions(), tp)
}

func TestCluster_ReassignmentCopiesToTheNewReplicaThenTheOldOneDropsItsLog(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("r", []int32{1, 2}, nil)
	c.waitISR("r", 1, 2)
	var acked []string
	for _, v := range []string{"a", "b", "c"} {
		c.nodes[1].mustProduce("r", v, -1)
		acked = append(acked, v)
	}
	// 1 leads and leaves: 3 copies the log, joins the ISR, and the
	// controller completes the move and elects 2.
	c.reassign("r", 2, 3)
	c.waitReassigned("r", 2, 3)
	if l := c.partitionInfo("r").Leader; l != 2 {
		t.Fatalf("leader %d after the move, want 2", l)
	}
	// Broker 2 applies the metadata at its own pace: it leads once it
	// has, not when the controller decided.
	eventually(t, "broker 2 took up the leadership", func() bool {
		p := c.nodes[2].rm.Get(partition.TopicPartition{Topic: "r", Partition: 0})
		return p != nil && p.IsLeader()
	})
	c.nodes[2].mustProduce("r", "d", -1)
	c.waitConverged("r", append(acked, "d")...)
	eventually(t, "broker 1 dropped its copy", func() bool { return !c.nodes[1].hosts("r") })
}

// follower.replication.throttled.rate holds back, on the broker it is set
// for, the replicas follower.replication.throttled.replicas names while
// they catch up, and nothing else: an unthrottled partition fetched from
// the same leader, and a throttled replica already in the ISR, replicate
// as before.
func TestCluster_FollowerThrottleHoldsBackOnlyACatchingUpThrottledReplica(t *testing.T) {
	ctx := context.Background()
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	// Nothing may be copied for throttled replicas on broker 3.
	if err := c.ctrl.SetBrokerConfigs(ctx, "3", map[string]string{"follower.replication.throttled.rate": "0"}, false); err != nil {
		t.Fatal(err)
	}
	c.createTopic("slow", []int32{1, 2}, map[string]string{"follower.replication.throttled.replicas": "0:3"})
	c.createTopic("fast", []int32{1, 2}, nil)
	c.createTopic("insync", []int32{1, 3}, map[string]string{"follower.replication.throttled.replicas": "*"})
	for _, topic := range []string{"slow", "fast", "insync"} {
		c.waitISR(topic, c.partitionInfo(topic).Replicas...)
		for _, v := range []string{"a", "b", "c"} {
			c.nodes[1].mustProduce(topic, v, -1)
		}
	}
	c.reassign("slow", 1, 2, 3)
	c.reassign("fast", 1, 2, 3)
	c.waitReassigned("fast", 1, 2, 3)
	c.waitConverged("fast", "a", "b", "c")
	c.waitConverged("insync", "a", "b", "c")
	// Broker 3 has fetched from 1 since it caught up on "fast"; "slow"
	// sat out every one of those fetches.
	if leo := c.nodes[3].log("slow").LogEndOffset(); leo != 0 {
		t.Fatalf("throttled replica copied up to %d at rate 0", leo)
	}
	if !c.partitionInfo("slow").Reassigning() {
		t.Fatalf("slow reassigned without its throttled replica: %+v", c.partitionInfo("slow"))
	}
	// Lifting the throttle lets it catch up and the move complete.
	if err := c.ctrl.SetBrokerConfigs(ctx, "3", nil, false); err != nil {
		t.Fatal(err)
	}
	c.waitReassigned("slow", 1, 2, 3)
	c.waitConverged("slow", "a", "b", "c")
}

// leader.replication.throttled.rate holds back what the leader sends a
// catching-up replica of a partition leader.replication.throttled.replicas
// names with the leader; the ISR and other partitions replicate as before.
func TestCluster_LeaderThrottleHoldsBackOnlyACatchingUpThrottledReplica(t *testing.T) {
	ctx := context.Background()
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	if err := c.ctrl.SetBrokerConfigs(ctx, "1", map[string]string{"leader.replication.throttled.rate": "0"}, false); err != nil {
		t.Fatal(err)
	}
	c.createTopic("slow", []int32{1, 2}, map[string]string{"leader.replication.throttled.replicas": "0:1"})
	c.createTopic("fast", []int32{1, 2}, nil)
	for _, topic := range []string{"slow", "fast"} {
		c.waitISR(topic, 1, 2)
		for _, v := range []string{"a", "b", "c"} {
			c.nodes[1].mustProduce(topic, v, -1)
		}
	}
	c.waitConverged("slow", "a", "b", "c")
	c.reassign("slow", 1, 2, 3)
	c.reassign("fast", 1, 2, 3)
	c.waitReassigned("fast", 1, 2, 3)
	c.waitConverged("fast", "a", "b", "c")
	if leo := c.nodes[3].log("slow").LogEndOffset(); leo != 0 {
		t.Fatalf("leader sent a throttled catching-up replica records up to %d at rate 0", leo)
	}
	if err := c.ctrl.SetBrokerConfigs(ctx, "1", nil, false); err != nil {
		t.Fatal(err)
	}
	c.waitReassigned("slow", 1, 2, 3)
	c.waitConverged("slow", "a", "b", "c")
}

package replication_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// rackCluster is brokers 1, 2, 3 in racks a, b, c with topic t on all
// three, led by 1, with n records committed on every replica.
func rackCluster(t *testing.T, selector string, n int) *simCluster {
	t.Helper()
	cfg := testReplConfig(200 * time.Millisecond)
	cfg.ReplicaSelectorClass = selector
	c := newSimClusterInRacks(t, cfg, map[int32]string{1: "a", 2: "b", 3: "c"}, 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, nil)
	l := c.leader("t")
	if l.id != 1 {
		t.Fatalf("leader %d, want 1", l.id)
	}
	var acked []string
	for i := range n {
		v := fmt.Sprintf("r%d", i)
		l.mustProduce("t", v, -1)
		acked = append(acked, v)
	}
	c.waitConverged("t", acked...)
	c.waitISR("t", 1, 2, 3)
	return c
}

// consumerFetch is a consumer's fetch of t from offset, with client
// metadata (Fetch v11+) naming rack when meta is set.
func consumerFetch(n *simNode, offset int64, meta bool, rack string) replication.FetchResult {
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	return n.rm.Fetch(context.Background(), replication.FetchParams{
		MaxBytes: 1 << 20, ClientMetadata: meta, ClientRack: rack,
		Partitions: []replication.FetchPartition{{TP: tp, Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}},
	})[0]
}

func TestPreferredReadReplica_LeaderSendsRackConsumerToInSyncReplicaInItsRack(t *testing.T) {
	c := rackCluster(t, replication.RackAwareReplicaSelector, 3)
	l := c.nodes[1]
	res := consumerFetch(l, 0, true, "b")
	if res.Err != nil || !res.HasPreferredReadReplica || res.PreferredReadReplica != 2 {
		t.Fatalf("rack b: err %v, preferred %v %d; want replica 2", res.Err, res.HasPreferredReadReplica, res.PreferredReadReplica)
	}
	if len(res.Records) != 0 || res.Region != nil {
		t.Fatal("an answer naming a preferred replica carries records")
	}
	if res.HighWatermark != 3 {
		t.Fatalf("HW %d, want 3", res.HighWatermark)
	}
	// The leader serves itself: its own rack, no rack, a rack without a
	// replica, and a fetch without client metadata (before v11).
	for _, tc := range []struct {
		rack string
		meta bool
	}{{"a", true}, {"", true}, {"d", true}, {"b", false}} {
		res := consumerFetch(l, 0, tc.meta, tc.rack)
		if res.Err != nil || res.HasPreferredReadReplica || len(res.Records) == 0 {
			t.Fatalf("rack %q (metadata %v): err %v, preferred %v %d, %d record bytes; want the leader's records",
				tc.rack, tc.meta, res.Err, res.HasPreferredReadReplica, res.PreferredReadReplica, len(res.Records))
		}
	}
	// A replica whose log does not reach the fetch offset is not chosen.
	if res := consumerFetch(l, 4, true, "b"); res.HasPreferredReadReplica {
		t.Fatalf("offset past replica 2's log end: preferred %d", res.PreferredReadReplica)
	}
}

func TestPreferredReadReplica_NoneWithoutReplicaSelector(t *testing.T) {
	c := rackCluster(t, "", 2)
	res := consumerFetch(c.nodes[1], 0, true, "b")
	if res.Err != nil || res.HasPreferredReadReplica || len(res.Records) == 0 {
		t.Fatalf("no replica.selector.class: err %v, preferred %v %d; want the leader's records", res.Err, res.HasPreferredReadReplica, res.PreferredReadReplica)
	}
}

func TestPreferredReadReplica_ReplicaOutOfISRIsNotChosen(t *testing.T) {
	c := rackCluster(t, replication.RackAwareReplicaSelector, 2)
	c.nodes[2].stop()
	c.nodes[1].mustProduce("t", "x", 1)
	c.waitISR("t", 1, 3)
	res := consumerFetch(c.nodes[1], 0, true, "b")
	if res.Err != nil || res.HasPreferredReadReplica || len(res.Records) == 0 {
		t.Fatalf("rack b with replica 2 out of the ISR: err %v, preferred %v %d; want the leader's records", res.Err, res.HasPreferredReadReplica, res.PreferredReadReplica)
	}
	// Rack c still has its in-sync replica.
	if res := consumerFetch(c.nodes[1], 0, true, "c"); !res.HasPreferredReadReplica || res.PreferredReadReplica != 3 {
		t.Fatalf("rack c: preferred %v %d, want replica 3", res.HasPreferredReadReplica, res.PreferredReadReplica)
	}
}

func TestFollowerServesConsumerWithClientMetadataUpToItsHighWatermark(t *testing.T) {
	c := rackCluster(t, replication.RackAwareReplicaSelector, 3)
	f := c.nodes[2]
	res := consumerFetch(f, 0, true, "b")
	if res.Err != nil || res.HasPreferredReadReplica {
		t.Fatalf("follower fetch: err %v, preferred %v", res.Err, res.HasPreferredReadReplica)
	}
	if res.HighWatermark != f.log("t").HighWatermark() || res.HighWatermark != 3 {
		t.Fatalf("HW %d, want the follower's own, 3", res.HighWatermark)
	}
	if got := len(headers(t, res.Records)); got != 3 {
		t.Fatalf("%d batches, want the 3 committed", got)
	}
	// At its log end: nothing yet; past it: OFFSET_OUT_OF_RANGE, which the
	// client resolves with the leader.
	if res := consumerFetch(f, 3, true, "b"); res.Err != nil || len(res.Records) != 0 {
		t.Fatalf("at the log end: err %v, %d bytes", res.Err, len(res.Records))
	}
	if res := consumerFetch(f, 10, true, "b"); !errors.Is(res.Err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("past the log end: %v, want OFFSET_OUT_OF_RANGE", res.Err)
	}
	// Without client metadata (Fetch before v11) only the leader serves.
	if res := consumerFetch(f, 0, false, ""); !errors.Is(res.Err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("follower fetch without client metadata: %v, want NOT_LEADER_OR_FOLLOWER", res.Err)
	}
}

func TestFollowerReadChecksTheLeaderEpoch(t *testing.T) {
	c := rackCluster(t, replication.RackAwareReplicaSelector, 1)
	f := c.nodes[2]
	c.elect("t", 1, 1, 2, 3) // epoch 1, so that an older one exists
	epoch := c.partitionInfo("t").LeaderEpoch
	eventually(t, "the follower is at the new epoch", func() bool { return f.rm.Get(partition.TopicPartition{Topic: "t"}).LeaderEpoch() == epoch })
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	for _, tc := range []struct {
		epoch int32
		want  error
	}{{epoch - 1, replication.ErrFencedLeaderEpoch}, {epoch + 1, replication.ErrUnknownLeaderEpoch}} {
		res := f.rm.Fetch(context.Background(), replication.FetchParams{
			MaxBytes: 1 << 20, ClientMetadata: true, ClientRack: "b",
			Partitions: []replication.FetchPartition{{TP: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: tc.epoch, LogStartOffset: -1}},
		})[0]
		if !errors.Is(res.Err, tc.want) {
			t.Fatalf("epoch %d at a follower of epoch %d: %v, want %v", tc.epoch, epoch, res.Err, tc.want)
		}
	}
}

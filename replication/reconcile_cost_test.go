package replication_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// bigTopicStack hosts topic "big" of n partitions, all led here, over an
// in-memory metadata log.
func bigTopicStack(t *testing.T, n int32) (*cluster.Controller, *cluster.MemLog, *replication.Manager) {
	t.Helper()
	ctx := context.Background()
	ctrl, mlog, err := cluster.OpenInMemory(ctx, cluster.Config{NodeID: nodeID, ClusterID: "c", NumPartitions: 1, DefaultReplicationFactor: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	if err := ctrl.Register(ctx, "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	logs := openLogs(t, partition.NewMemFS(), "/logs", ctrl)
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, ctrl)
	if errs := ctrl.CreateTopics(ctx, []cluster.TopicSpec{{Name: "big", NumPartitions: n, ReplicationFactor: 1}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	return ctrl, mlog, rm
}

// change replaces partition p of "big" as fn edits it, as one metadata
// entry.
func change(t *testing.T, ctrl *cluster.Controller, mlog *cluster.MemLog, p int32, fn func(pi *cluster.PartitionInfo)) {
	t.Helper()
	cur := *ctrl.Image().Partition("big", p)
	next := cur
	fn(&next)
	next.PartitionEpoch++
	if err := mlog.Propose(context.Background(), &cluster.Command{Type: cluster.CmdChangePartitions, Changes: []cluster.PartitionChange{{
		Topic: "big", ExpectPartitionEpoch: cur.PartitionEpoch, Next: next,
	}}}); err != nil {
		t.Fatal(err)
	}
}

func TestChangeOfOnePartitionOfABigTopicExaminesOnlyThatPartition(t *testing.T) {
	ctrl, mlog, rm := bigTopicStack(t, 1000)
	before := replication.ReconcileVisits(rm)
	change(t, ctrl, mlog, 7, func(pi *cluster.PartitionInfo) { pi.LeaderEpoch++ })
	if n := replication.ReconcileVisits(rm) - before; n != 1 {
		t.Fatalf("a change of one partition of 1,000 examined %d partition records, want 1", n)
	}
	// And it was applied: the replica leads in the new epoch.
	epoch := ctrl.Image().Partition("big", 7).LeaderEpoch
	res := rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{
		{TP: tp("big", 7), MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch},
	}})
	if res[0].Err != nil {
		t.Fatalf("fetch in the new leader epoch %d: %v", epoch, res[0].Err)
	}
}

func TestPartitionMovedAwayByAPartitionChangeIsRemoved(t *testing.T) {
	ctrl, mlog, rm := bigTopicStack(t, 20)
	change(t, ctrl, mlog, 9, func(pi *cluster.PartitionInfo) {
		pi.Replicas, pi.ISR, pi.Leader = []int32{nodeID + 1}, []int32{nodeID + 1}, nodeID+1
		pi.LeaderEpoch++
	})
	for _, p := range []int32{9, 10} {
		res := rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{
			{TP: tp("big", p), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1},
		}})
		switch {
		case p == 9 && res[0].Err == nil:
			t.Fatal("the partition moved to another broker is still served here")
		case p == 9 && !errors.Is(res[0].Err, replication.ErrUnknownTopicOrPartition) && !errors.Is(res[0].Err, replication.ErrNotLeaderOrFollower):
			t.Fatalf("moved partition: %v", res[0].Err)
		case p == 10 && res[0].Err != nil:
			t.Fatalf("an unchanged partition: %v", res[0].Err)
		}
	}
}

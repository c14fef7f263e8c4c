package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// rackStack serves topic "t" (one partition, replicas 1 and 2, led here
// by 1 in rack a; 2 is in rack b) with replica.selector.class set.
func rackStack(t *testing.T) *Handlers {
	t.Helper()
	a, b := "a", "b"
	top := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{7}, Partitions: []cluster.PartitionInfo{
		{Partition: 0, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
	}}
	meta := &limitsMeta{img: &cluster.Image{
		ClusterID: "rack", ControllerID: 1,
		Brokers: map[int32]cluster.BrokerInfo{
			1: {NodeID: 1, Host: "127.0.0.1", Port: 9092, Rack: &a},
			2: {NodeID: 2, Host: "127.0.0.1", Port: 9093, Rack: &b},
		},
		Topics: map[string]*cluster.TopicInfo{"t": top},
		IDs:    map[cluster.TopicID]string{top.ID: "t"},
	}}
	configFor := func(topic string) partition.Config {
		im := meta.Image()
		return replication.LogConfig(im, im.Topics[topic], 1, meta.BrokerDefaults())
	}
	logs, err := partition.OpenManager(partition.OSFS(), partition.ManagerConfig{
		Dirs: []string{t.TempDir()}, NodeID: 1, ClusterID: "rack", Defaults: partition.DefaultConfig(),
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour, FlushSchedulerInterval: time.Hour,
	}, configFor, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	rcfg := replication.DefaultConfig()
	rcfg.NodeID, rcfg.ReplicaSelectorClass = 1, replication.RackAwareReplicaSelector
	rm, err := replication.NewManagerWithConfig(rcfg, logs, meta, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return Register(protocol.NewRegistry(), Config{}, meta, rm)
}

// The leader names the rack-b replica to a v11+ consumer in rack b, and
// serves a v10 one (no client metadata) itself.
func TestFetchAnswersPreferredReadReplicaFromV11(t *testing.T) {
	h := rackStack(t)
	ctx := context.Background()
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	for range 3 {
		if _, err := h.replicas.Produce(ctx, tp, testBatch(1, 10), 1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Replica 2 fetches at the leader's log end: in sync, with everything.
	follow := fetchReq(11, 1<<20, fetchPartition(0, 3, 1<<20))
	follow.Body.(*kmsg.FetchRequest).ReplicaID = 2
	if _, err := h.fetch(ctx, follow); err != nil {
		t.Fatal(err)
	}

	for _, version := range []int16{11, 16} {
		req := fetchReq(version, 1<<20, fetchPartition(0, 0, 1<<20))
		req.Body.(*kmsg.FetchRequest).Rack = "b"
		resp, err := h.fetch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		rp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.PreferredReadReplica != 2 || len(rp.RecordBatches) != 0 || rp.HighWatermark != 3 {
			t.Fatalf("v%d, rack b: error %d, preferred %d, %d record bytes, HW %d; want replica 2, no records, HW 3",
				version, rp.ErrorCode, rp.PreferredReadReplica, len(rp.RecordBatches), rp.HighWatermark)
		}
	}
	req := fetchReq(10, 1<<20, fetchPartition(0, 0, 1<<20))
	req.Body.(*kmsg.FetchRequest).Rack = "b" // not on the wire before v11
	resp, err := h.fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.PreferredReadReplica != -1 || len(rp.RecordBatches) == 0 {
		t.Fatalf("v10: error %d, preferred %d, %d record bytes; want the leader's records", rp.ErrorCode, rp.PreferredReadReplica, len(rp.RecordBatches))
	}
}

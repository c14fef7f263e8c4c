package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rs/zerolog"
)

// The in-memory log runs the real Controller: registration, the
// AlterPartition checks and elections are the ones the raft quorum
// applies, with nothing but the calls the test makes.
func TestInMemoryControllerElectsAndFencesAsTheQuorumDoes(t *testing.T) {
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, testConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Image().ClusterID == "" || c.Image().ControllerID != 1 {
		t.Fatalf("cluster id %q, controller %d: want an id and node 1", c.Image().ClusterID, c.Image().ControllerID)
	}
	for _, id := range []int32{1, 2, 3} {
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Incarnation: newIncarnation()}); err != nil {
			t.Fatal(err)
		}
		if fenced, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil || fenced {
			t.Fatalf("unfence %d: fenced %v, %v", id, fenced, err)
		}
	}
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}})
	p := *c.Image().Partition("t", 0)

	// A stale partition epoch is refused, as by the quorum.
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, NewISR: []int32{1, 2}}); !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale partition epoch: %v, want ErrInvalidUpdateVersion", err)
	}
	// Fencing the leader elects the next ISR member with a new epoch.
	if _, _, err := c.BrokerHeartbeat(ctx, 1, true, nil); err != nil {
		t.Fatal(err)
	}
	q := *c.Image().Partition("t", 0)
	if q.Leader != 2 || q.LeaderEpoch != p.LeaderEpoch+1 || slices.Contains(q.ISR, 1) {
		t.Fatalf("after fencing the leader: %+v, want leader 2 at epoch %d without 1 in the ISR", q, p.LeaderEpoch+1)
	}
	// A fenced broker cannot rejoin the ISR.
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, Topic: "t", LeaderEpoch: q.LeaderEpoch, PartitionEpoch: q.PartitionEpoch, NewISR: []int32{1, 2, 3}}); !errors.Is(err, ErrIneligibleReplica) {
		t.Fatalf("fenced broker into the ISR: %v, want ErrIneligibleReplica", err)
	}
	if c.log.AppliedIndex() != uint64(c.Image().Offset) {
		t.Fatalf("applied index %d, image offset %d", c.log.AppliedIndex(), c.Image().Offset)
	}
}

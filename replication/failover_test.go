package replication_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// followerFetch is one fetch by replica id of partition 0 of "t" at offset
// under leader epoch epoch.
func followerFetch(rm *replication.Manager, id int32, epoch int32, offset int64) replication.FetchResult {
	return rm.Fetch(context.Background(), replication.FetchParams{FromFollower: true, ReplicaID: id, MaxBytes: 1 << 20,
		Partitions: []replication.FetchPartition{{TP: tp("t", 0), Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch}},
	})[0]
}

// Issue 11 item 8, KIP-207: a leader elected with a HW below its log end
// (it learnt the HW as a follower, behind the old leader's) must not answer
// ListOffsets "latest" with that HW — consumers already saw the old
// leader's, and the offset would move backwards. It answers
// OFFSET_NOT_AVAILABLE until its HW reaches the start of its epoch.
func TestListOffsetLatestIsNotAvailableUntilHWReachesEpochStart(t *testing.T) {
	meta, rm := newFakeStack(t, imageWith(1, 0, 1, 2))
	p := tp("t", 0)
	for i := range 3 {
		if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(1, int64(1000+i), 1), 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	if r := followerFetch(rm, 2, 0, 1); r.Err != nil || r.HighWatermark != 1 {
		t.Fatalf("follower fetch: HW %d (%v), want 1", r.HighWatermark, r.Err)
	}
	if off, _, _, err := rm.ListOffset(p, -1, -1, false); err != nil || off != 1 {
		t.Fatalf("latest at epoch 0: %d (%v), want 1", off, err)
	}

	// Leader again at epoch 1, its epoch starting at its LEO 3, its HW 1.
	meta.Publish(imageWith(1, 1, 1, 2))
	for _, c := range []struct {
		name string
		ts   int64
		rc   bool
	}{{"latest", -1, false}, {"latest read_committed", -1, true}, {"timestamp past the HW", 1002, false}} {
		if _, _, _, err := rm.ListOffset(p, c.ts, -1, c.rc); !errors.Is(err, replication.ErrOffsetNotAvailable) || !errors.Is(err, kerr.OffsetNotAvailable) {
			t.Errorf("%s while the HW lags the epoch start: %v, want OFFSET_NOT_AVAILABLE", c.name, err)
		}
	}
	if off, _, _, err := rm.ListOffset(p, -2, -1, false); err != nil || off != 0 {
		t.Fatalf("earliest: %d (%v), want 0", off, err)
	}
	if off, _, _, err := rm.ListOffset(p, 1000, -1, false); err != nil || off != 0 {
		t.Fatalf("timestamp below the HW: %d (%v), want 0", off, err)
	}

	if r := followerFetch(rm, 2, 1, 3); r.Err != nil || r.HighWatermark != 3 {
		t.Fatalf("follower fetch at epoch 1: HW %d (%v), want 3", r.HighWatermark, r.Err)
	}
	if off, _, e, err := rm.ListOffset(p, -1, -1, false); err != nil || off != 3 || e != 1 {
		t.Fatalf("latest once the HW reached the epoch start: %d epoch %d (%v), want 3 epoch 1", off, e, err)
	}
}

// Issue 11 item 8: a follower's fetch position is recorded for every
// partition of its fetch, also those read with no bytes left in the
// response budget; otherwise the leader's HW (and the follower's ISR
// membership) would depend on the order of partitions in the request.
func TestFollowerFetchPositionRecordedWhenResponseBudgetIsSpent(t *testing.T) {
	img := imageWith(1, 0, 1, 2)
	top := *img.Topics["t"]
	p1 := top.Partitions[0]
	p1.Partition = 1
	top.Partitions = append([]cluster.PartitionInfo{top.Partitions[0]}, p1)
	img.Topics["t"] = &top
	_, rm := newFakeStack(t, img)
	for _, p := range []int32{0, 1} {
		if _, err := rm.Produce(context.Background(), tp("t", p), testkit.SimpleBatch(1, 1000, 100), 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Partition 0's batch fills the 1-byte response budget (a first batch
	// is always returned whole); partition 1 is read with nothing left.
	// The follower already holds partition 1 up to the leader's LEO.
	res := rm.Fetch(context.Background(), replication.FetchParams{FromFollower: true, ReplicaID: 2, MaxBytes: 1, Partitions: []replication.FetchPartition{
		{TP: tp("t", 0), Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0},
		{TP: tp("t", 1), Offset: 1, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0},
	}})
	if len(headers(t, res[0].Records)) != 1 {
		t.Fatalf("partition 0: %d bytes, want its batch", len(res[0].Records))
	}
	if hw := rm.Get(tp("t", 1)).Log().HighWatermark(); hw != 1 || res[1].HighWatermark != 1 {
		t.Fatalf("partition 1: HW %d (answered %d) after the follower fetched at 1, want 1", hw, res[1].HighWatermark)
	}
}

// Issue 11 item 1, through the replica manager: an expansion the
// controller answered NOT_CONTROLLER (it lost the quorum: the change may
// be committed) is sent again, unchanged, and until an answer comes the
// HW counts the added replica — nothing is acknowledged that it lacks.
func TestAlterPartitionNotControllerIsResentAndHoldsTheHW(t *testing.T) {
	img := imageWith(1, 0, 1, 2)
	img.Topics["t"].Partitions[0].ISR = []int32{1}
	calls := make(chan cluster.AlterPartitionRequest, 10)
	answer := make(chan struct{})
	meta := fake.NewMeta(nodeID, img)
	var n atomic.Int32
	meta.Alter = func(req cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
		calls <- req
		if n.Add(1) == 1 {
			return cluster.PartitionInfo{}, fmt.Errorf("proposing: %w", cluster.ErrNotController)
		}
		<-answer
		next := imageWith(1, 0, 1, 2)
		pi := &next.Topics["t"].Partitions[0]
		pi.ISR, pi.PartitionEpoch = req.NewISR, req.PartitionEpoch+1
		return *pi, nil
	}
	logs := openLogs(t, partition.NewMemFS(), "/logs", meta)
	t.Cleanup(func() { logs.Close() })
	cfg := replication.DefaultConfig()
	cfg.NodeID = nodeID
	cfg.ReplicaFetchBackoff = time.Millisecond
	rm, err := replication.NewManagerWithConfig(cfg, logs, meta, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	t.Cleanup(func() {
		select {
		case <-answer:
		default:
			close(answer)
		}
	})
	p := tp("t", 0)
	if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1000, 1), 1, 0); err != nil {
		t.Fatal(err)
	}
	if r := followerFetch(rm, 2, 0, 1); r.Err != nil { // 2 caught up: expand to {1,2}
		t.Fatal(r.Err)
	}
	next := func() cluster.AlterPartitionRequest {
		t.Helper()
		select {
		case req := <-calls:
			return req
		case <-time.After(10 * time.Second):
			t.Fatal("no AlterPartition sent")
		}
		panic("unreachable")
	}
	first := next()
	second := next()
	if !slices.Equal(first.NewISR, second.NewISR) || first.PartitionEpoch != second.PartitionEpoch || !sameMembers(second.NewISR, []int32{1, 2}) {
		t.Fatalf("resent %+v after NOT_CONTROLLER, want the same change as %+v", second, first)
	}
	// The second send is in flight: 2 has not fetched what comes now.
	if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1001, 1), 1, 0); err != nil {
		t.Fatal(err)
	}
	if hw := rm.Get(p).Log().HighWatermark(); hw != 1 {
		t.Fatalf("HW %d while the expansion's outcome is unknown, want 1 (replica 2's LEO)", hw)
	}
	close(answer)
	eventually(t, "the ISR includes 2", func() bool { return sameMembers(rm.Get(p).ISR(), []int32{1, 2}) })
	if r := followerFetch(rm, 2, 0, 2); r.Err != nil || r.HighWatermark != 2 {
		t.Fatalf("HW %d (%v) once 2 fetched, want 2", r.HighWatermark, r.Err)
	}
}

func sameMembers(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A panic in a replica-manager task (here the AlterPartition call) is
// logged, not fatal to the broker.
func TestPanicInAlterPartitionDoesNotTakeTheBrokerDown(t *testing.T) {
	img := imageWith(1, 0, 1, 2)
	img.Topics["t"].Partitions[0].ISR = []int32{1}
	called := make(chan struct{}, 1)
	meta := fake.NewMeta(nodeID, img)
	meta.Alter = func(cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
		called <- struct{}{}
		panic("controller client bug")
	}
	logs := openLogs(t, partition.NewMemFS(), "/logs", meta)
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, meta)
	p := tp("t", 0)
	mustProduce(t, rm, p, testkit.SimpleBatch(1, 1000, 1))
	if r := followerFetch(rm, 2, 0, 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	<-called
	if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1001, 1), 1, 0); err != nil {
		t.Fatalf("produce after the panic: %v", err)
	}
}

package replication_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

func TestCreateTopicHostsEveryPartition(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 3, nil)
	for p := int32(0); p < 3; p++ {
		part := s.rm.Get(tp("t", p))
		if part == nil {
			t.Fatalf("partition %d not hosted", p)
		}
		if part.LeaderEpoch() != 0 {
			t.Fatalf("partition %d leader epoch %d, want 0", p, part.LeaderEpoch())
		}
		// A new partition's files wait for its first append.
		dir := filepath.Join(s.logDir, tp("t", p).String())
		if exists(t, dir) {
			t.Fatalf("partition %d has a directory before any append", p)
		}
		mustProduce(t, s.rm, tp("t", p), testkit.SimpleBatch(1, 1, 10))
		if !exists(t, dir) {
			t.Fatalf("no directory for partition %d after its first append", p)
		}
	}
	if s.rm.Get(tp("t", 3)) != nil {
		t.Fatal("partition 3 hosted")
	}
	// Growing the topic adds the new partitions.
	if err := s.ctrl.CreatePartitions(context.Background(), "t", 5, nil, false); err != nil {
		t.Fatal(err)
	}
	settle(t, s.ctrl)
	for p := int32(3); p < 5; p++ {
		if s.rm.Get(tp("t", p)) == nil {
			t.Fatalf("new partition %d not hosted", p)
		}
		mustProduce(t, s.rm, tp("t", p), testkit.SimpleBatch(1, 1000, 1))
	}
}

func TestProduceThenFetchReturnsBatchesWithAssignedOffsets(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	b1, b2 := testkit.SimpleBatch(3, 1000, 5), testkit.SimpleBatch(2, 2000, 5)
	info := mustProduce(t, s.rm, p, b1)
	if info.FirstOffset != 0 || info.LastOffset != 2 || info.NumRecords != 3 {
		t.Fatalf("first append %+v, want offsets 0..2", info)
	}
	info = mustProduce(t, s.rm, p, b2)
	if info.FirstOffset != 3 || info.LastOffset != 4 {
		t.Fatalf("second append %+v, want offsets 3..4", info)
	}
	lg := s.rm.Get(p).Log()
	if lg.LogEndOffset() != 5 || lg.HighWatermark() != lg.LogEndOffset() {
		t.Fatalf("LEO %d HW %d, want both 5", lg.LogEndOffset(), lg.HighWatermark())
	}

	r := fetchOne(s.rm, p, 0)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.HighWatermark != 5 || r.LastStableOffset != 5 || r.LogStartOffset != 0 {
		t.Fatalf("HW %d LSO %d log start %d, want 5 5 0", r.HighWatermark, r.LastStableOffset, r.LogStartOffset)
	}
	hs := headers(t, r.Records)
	if len(hs) != 2 || hs[0].BaseOffset != 0 || hs[0].NumRecords != 3 || hs[1].BaseOffset != 3 || hs[1].NumRecords != 2 {
		t.Fatalf("fetched batches %+v", hs)
	}
	if hs[0].PartitionLeaderEpoch != 0 {
		t.Fatalf("batch stamped with leader epoch %d, want 0", hs[0].PartitionLeaderEpoch)
	}
	// Everything after the base offset and leader epoch is what the producer sent.
	if len(r.Records) != len(b1)+len(b2) || string(r.Records[partition.BatchHeaderSize:len(b1)]) != string(b1[partition.BatchHeaderSize:]) {
		t.Fatal("fetched records differ from the produced ones")
	}
	// A fetch inside a batch returns the whole batch holding the offset.
	if hs := headers(t, fetchOne(s.rm, p, 4).Records); len(hs) != 1 || hs[0].BaseOffset != 3 {
		t.Fatalf("fetch at 4: %+v", hs)
	}
	// At the log end: nothing, no error.
	if r := fetchOne(s.rm, p, 5); r.Err != nil || len(r.Records) != 0 {
		t.Fatalf("fetch at LEO: err %v, %d bytes", r.Err, len(r.Records))
	}
}

func TestFetchAtHighWatermarkIsWokenByProduce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rm := newFakeStack(t, imageWith(1, 0, 1))
		p := tp("t", 0)
		mustProduce(t, rm, p, testkit.SimpleBatch(3, 1000, 5))
		done := make(chan replication.FetchResult, 1)
		go func() {
			done <- rm.Fetch(context.Background(), replication.FetchParams{
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 5 * time.Second,
				Partitions: []replication.FetchPartition{{TP: p, Offset: 3, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			})[0]
		}()
		synctest.Wait()
		select {
		case r := <-done:
			t.Fatalf("fetch at HW returned without waiting: %+v", r)
		default:
		}
		mustProduce(t, rm, p, testkit.SimpleBatch(2, 2000, 5))
		synctest.Wait()
		select {
		case r := <-done:
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			hs := headers(t, r.Records)
			if len(hs) != 1 || hs[0].BaseOffset != 3 || hs[0].NumRecords != 2 || r.HighWatermark != 5 {
				t.Fatalf("woken fetch returned %+v (HW %d), want the batch at 3", hs, r.HighWatermark)
			}
		default:
			t.Fatal("produce did not wake the parked fetch")
		}
	})
}

func TestFetchOverSeveralPartitionsIsWokenByAnyOfThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		im := imageWith(1, 0, 1)
		top := im.Topics["t"]
		for p := int32(1); p < 3; p++ {
			pi := top.Partitions[0]
			pi.Partition = p
			top.Partitions = append(top.Partitions, pi)
		}
		_, rm := newFakeStack(t, im)
		done := make(chan []replication.FetchResult, 1)
		go func() {
			fp := replication.FetchParams{MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Hour}
			for p := int32(0); p < 3; p++ {
				fp.Partitions = append(fp.Partitions, replication.FetchPartition{TP: tp("t", p), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
			}
			done <- rm.Fetch(context.Background(), fp)
		}()
		synctest.Wait()
		mustProduce(t, rm, tp("t", 2), testkit.SimpleBatch(1, 1000, 5))
		synctest.Wait()
		select {
		case res := <-done:
			if len(res[0].Records) != 0 || len(res[1].Records) != 0 {
				t.Fatal("data from partitions nobody produced to")
			}
			if hs := headers(t, res[2].Records); len(hs) != 1 {
				t.Fatalf("partition 2 returned %+v", hs)
			}
		default:
			t.Fatal("produce to the third partition did not wake the fetch")
		}
	})
}

func TestFetchMinBytesOnEmptyPartitionReturnsEmptyAfterMaxWait(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	res := s.rm.Fetch(context.Background(), replication.FetchParams{
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 50 * time.Millisecond,
		Partitions: []replication.FetchPartition{{TP: tp("t", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
	})
	if len(res) != 1 || res[0].Err != nil || len(res[0].Records) != 0 {
		t.Fatalf("got %+v, want one empty result without error", res)
	}
	if res[0].HighWatermark != 0 || res[0].LogStartOffset != 0 {
		t.Fatalf("HW %d log start %d, want 0 0", res[0].HighWatermark, res[0].LogStartOffset)
	}
}

func TestFetchContextCancelReleasesParkedFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rm := newFakeStack(t, imageWith(1, 0, 1))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan replication.FetchResult, 1)
		go func() {
			done <- rm.Fetch(ctx, replication.FetchParams{
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Hour,
				Partitions: []replication.FetchPartition{{TP: tp("t", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			})[0]
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("fetch returned before cancel")
		default:
		}
		cancel()
		synctest.Wait()
		select {
		case r := <-done:
			if r.Err != nil || len(r.Records) != 0 {
				t.Fatalf("cancelled fetch: %+v, want empty without error", r)
			}
		default:
			t.Fatal("cancel did not release the parked fetch")
		}
	})
}

func TestFetchParkedOnDeletedTopicReturnsUnknownTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta, rm := newFakeStack(t, imageWith(1, 0, 1))
		done := make(chan replication.FetchResult, 1)
		go func() {
			done <- rm.Fetch(context.Background(), replication.FetchParams{
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Hour,
				Partitions: []replication.FetchPartition{{TP: tp("t", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			})[0]
		}()
		synctest.Wait()
		meta.Publish(emptyImage())
		synctest.Wait()
		select {
		case r := <-done:
			if !errors.Is(r.Err, replication.ErrUnknownTopicOrPartition) {
				t.Fatalf("got %v, want ErrUnknownTopicOrPartition", r.Err)
			}
		default:
			t.Fatal("deleting the topic did not release the parked fetch")
		}
	})
}

func TestFetchMaxBytesReturnsOneWholeBatchOnlyForTheFirstPartition(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 2, nil)
	b := testkit.SimpleBatch(1, 1000, 200)
	mustProduce(t, s.rm, tp("t", 0), b)
	mustProduce(t, s.rm, tp("t", 0), testkit.SimpleBatch(1, 1001, 200))
	mustProduce(t, s.rm, tp("t", 1), testkit.SimpleBatch(1, 1000, 200))
	both := func(reqMax, partMax int32, offset0 int64) []replication.FetchResult {
		return s.rm.Fetch(context.Background(), replication.FetchParams{
			MaxBytes: reqMax,
			Partitions: []replication.FetchPartition{
				{TP: tp("t", 0), Offset: offset0, MaxBytes: partMax, CurrentLeaderEpoch: -1},
				{TP: tp("t", 1), Offset: 0, MaxBytes: partMax, CurrentLeaderEpoch: -1},
			},
		})
	}
	for _, tc := range []struct {
		name            string
		reqMax, partMax int32
	}{
		{"request limit", 10, 1 << 20},
		{"partition limit", 1 << 20, 10},
	} {
		res := both(tc.reqMax, tc.partMax, 0)
		if res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("%s: errors %v %v", tc.name, res[0].Err, res[1].Err)
		}
		if hs := headers(t, res[0].Records); len(hs) != 1 || hs[0].BaseOffset != 0 || len(res[0].Records) != len(b) {
			t.Fatalf("%s: first partition returned %d bytes %+v, want exactly its first batch (%d bytes)", tc.name, len(res[0].Records), hs, len(b))
		}
		if len(res[1].Records) != 0 {
			t.Fatalf("%s: second partition returned %d bytes over the limit", tc.name, len(res[1].Records))
		}
		if res[1].HighWatermark != 1 {
			t.Fatalf("%s: second partition HW %d, want 1", tc.name, res[1].HighWatermark)
		}
	}
	// If the first partition has nothing to return, the second is the
	// first to return data and gets its whole batch.
	res := both(10, 1<<20, 2)
	if len(res[0].Records) != 0 || len(headers(t, res[1].Records)) != 1 {
		t.Fatalf("with partition 0 at its end: %d and %d bytes", len(res[0].Records), len(res[1].Records))
	}
}

func TestFetchBeyondLogEndIsOffsetOutOfRange(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	mustProduce(t, s.rm, tp("t", 0), testkit.SimpleBatch(2, 1000, 1))
	r := fetchOne(s.rm, tp("t", 0), 3)
	if !errors.Is(r.Err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("got %v, want ErrOffsetOutOfRange", r.Err)
	}
	if r.HighWatermark != 2 {
		t.Fatalf("HW %d in the error result, want 2", r.HighWatermark)
	}
}

func TestUnknownTopicOrPartition(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	for _, p := range []partition.TopicPartition{tp("nope", 0), tp("t", 1), tp("t", -1)} {
		if r := fetchOne(s.rm, p, 0); !errors.Is(r.Err, replication.ErrUnknownTopicOrPartition) {
			t.Errorf("fetch %s: got %v", p, r.Err)
		}
		if _, err := s.rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1, 1), 1, time.Second); !errors.Is(err, replication.ErrUnknownTopicOrPartition) {
			t.Errorf("produce %s: got %v", p, err)
		}
		if _, _, _, err := s.rm.ListOffset(p, -1, -1, false); !errors.Is(err, replication.ErrUnknownTopicOrPartition) {
			t.Errorf("list offset %s: got %v", p, err)
		}
		if _, err := s.rm.DeleteRecords(p, 0); !errors.Is(err, replication.ErrUnknownTopicOrPartition) {
			t.Errorf("delete records %s: got %v", p, err)
		}
	}
	// An unknown partition in a fetch does not hide the others' data.
	mustProduce(t, s.rm, tp("t", 0), testkit.SimpleBatch(1, 1, 1))
	res := s.rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{
		{TP: tp("nope", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1},
		{TP: tp("t", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1},
	}})
	if !errors.Is(res[0].Err, replication.ErrUnknownTopicOrPartition) || res[1].Err != nil || len(headers(t, res[1].Records)) != 1 {
		t.Fatalf("mixed fetch: %v / %v %d bytes", res[0].Err, res[1].Err, len(res[1].Records))
	}
}

// newFakeStack hosts topic "t" as described by img, on an in-memory disk.
func newFakeStack(t *testing.T, img *cluster.Image) (*fake.Meta, *replication.Manager) {
	t.Helper()
	meta := fake.NewMeta(nodeID, img)
	logs := openLogs(t, partition.NewMemFS(), "/logs", meta)
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, meta)
	return meta, rm
}

func fetchEpoch(rm *replication.Manager, epoch int32) replication.FetchResult {
	return rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{
		{TP: tp("t", 0), MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch},
	}})[0]
}

// KIP-320: a request's current leader epoch older than the leader's is
// FENCED_LEADER_EPOCH, newer is UNKNOWN_LEADER_EPOCH, -1 skips the check.
func TestCurrentLeaderEpochIsChecked(t *testing.T) {
	meta, rm := newFakeStack(t, imageWith(1, 3, 1))
	mustProduce(t, rm, tp("t", 0), testkit.SimpleBatch(1, 1000, 1))
	for _, tc := range []struct {
		epoch int32
		want  error
	}{
		{2, replication.ErrFencedLeaderEpoch},
		{0, replication.ErrFencedLeaderEpoch},
		{4, replication.ErrUnknownLeaderEpoch},
		{3, nil},
		{-1, nil},
	} {
		r := fetchEpoch(rm, tc.epoch)
		if !errors.Is(r.Err, tc.want) {
			t.Errorf("fetch with epoch %d: got %v, want %v", tc.epoch, r.Err, tc.want)
		}
		if tc.want == nil && len(headers(t, r.Records)) != 1 {
			t.Errorf("fetch with epoch %d returned no data", tc.epoch)
		}
		if _, _, _, err := rm.ListOffset(tp("t", 0), -1, tc.epoch, false); !errors.Is(err, tc.want) {
			t.Errorf("list offset with epoch %d: got %v, want %v", tc.epoch, err, tc.want)
		}
		if _, _, err := rm.OffsetForLeaderEpoch(tp("t", 0), tc.epoch, 3); !errors.Is(err, tc.want) {
			t.Errorf("offset for leader epoch with current epoch %d: got %v, want %v", tc.epoch, err, tc.want)
		}
	}
	// The leader stamps its epoch on what it appends.
	if hs := headers(t, fetchEpoch(rm, -1).Records); hs[0].PartitionLeaderEpoch != 3 {
		t.Fatalf("batch leader epoch %d, want 3", hs[0].PartitionLeaderEpoch)
	}
	// A new leader epoch fences the old one.
	meta.Publish(imageWith(1, 4, 1))
	if r := fetchEpoch(rm, 3); !errors.Is(r.Err, replication.ErrFencedLeaderEpoch) {
		t.Fatalf("epoch 3 after bump: got %v, want ErrFencedLeaderEpoch", r.Err)
	}
	if r := fetchEpoch(rm, 4); r.Err != nil {
		t.Fatalf("epoch 4 after bump: %v", r.Err)
	}
	if _, _, e, err := rm.ListOffset(tp("t", 0), -1, -1, false); err != nil || e != 4 {
		t.Fatalf("latest offset epoch %d (%v), want 4", e, err)
	}
	mustProduce(t, rm, tp("t", 0), testkit.SimpleBatch(1, 1001, 1))
	if e, off, err := rm.OffsetForLeaderEpoch(tp("t", 0), -1, 3); err != nil || e != 3 || off != 1 {
		t.Fatalf("end of epoch 3: epoch %d offset %d (%v), want 3 1", e, off, err)
	}
}

func TestNotLeaderOrFollowerWhenAnotherBrokerLeads(t *testing.T) {
	meta, rm := newFakeStack(t, imageWith(1, 0, 1))
	mustProduce(t, rm, tp("t", 0), testkit.SimpleBatch(1, 1000, 1))
	meta.Publish(imageWith(2, 1, 2, 1))
	if rm.Get(tp("t", 0)) == nil {
		t.Fatal("follower replica not hosted")
	}
	if _, err := rm.Produce(context.Background(), tp("t", 0), testkit.SimpleBatch(1, 1, 1), 1, time.Second); !errors.Is(err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("produce to follower: got %v, want ErrNotLeaderOrFollower", err)
	}
	if r := fetchEpoch(rm, -1); !errors.Is(r.Err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("consumer fetch from follower: got %v, want ErrNotLeaderOrFollower", r.Err)
	}
	// Not a replica at all: no log here, and the partition still exists.
	meta.Publish(imageWith(2, 2, 2))
	if rm.Get(tp("t", 0)) != nil {
		t.Fatal("partition still hosted after reassignment away")
	}
	if r := fetchEpoch(rm, -1); !errors.Is(r.Err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("fetch of a partition hosted elsewhere: got %v, want ErrNotLeaderOrFollower", r.Err)
	}
}

func TestProduceRejectsInvalidPayloads(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	corrupt := testkit.SimpleBatch(2, 1000, 10)
	corrupt[len(corrupt)-3] ^= 0xff
	for _, tc := range []struct {
		name    string
		records []byte
		want    error
	}{
		{"two batches", append(testkit.SimpleBatch(1, 1000, 1), testkit.SimpleBatch(1, 1001, 1)...), partition.ErrInvalidRecord},
		{"control batch", testkit.Batch{FirstTimestamp: 1000, Records: 1, ValueLen: 1, Attributes: 0x20}.Encode(t), partition.ErrInvalidRecord},
		{"empty", nil, partition.ErrInvalidRecord},
		{"bad crc", corrupt, partition.ErrCorruptMessage},
		{"truncated", testkit.SimpleBatch(2, 1000, 10)[:40], partition.ErrCorruptMessage},
	} {
		_, err := s.rm.Produce(context.Background(), p, tc.records, 1, time.Second)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if leo := s.rm.Get(p).Log().LogEndOffset(); leo != 0 {
		t.Fatalf("rejected produces appended: LEO %d", leo)
	}
}

func TestProduceAboveMaxMessageBytesIsMessageTooLarge(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, map[string]string{"max.message.bytes": "200"})
	p := tp("t", 0)
	big := testkit.SimpleBatch(1, 1000, 300)
	if _, err := s.rm.Produce(context.Background(), p, big, 1, time.Second); !errors.Is(err, partition.ErrMessageTooLarge) {
		t.Fatalf("got %v, want ErrMessageTooLarge", err)
	}
	mustProduce(t, s.rm, p, testkit.SimpleBatch(1, 1000, 10))
	// Raising the topic config reaches the log.
	if err := s.ctrl.SetTopicConfigs(context.Background(), "t", map[string]string{"max.message.bytes": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	settle(t, s.ctrl)
	mustProduce(t, s.rm, p, big)
	// And so does a dynamic broker default once the topic override is gone.
	if err := s.ctrl.SetTopicConfigs(context.Background(), "t", nil, false); err != nil {
		t.Fatal(err)
	}
	settle(t, s.ctrl)
	if err := s.ctrl.SetBrokerConfigs(context.Background(), "", map[string]string{"message.max.bytes": "100"}, false); err != nil {
		t.Fatal(err)
	}
	settle(t, s.ctrl)
	if _, err := s.rm.Produce(context.Background(), p, big, 1, time.Second); !errors.Is(err, partition.ErrMessageTooLarge) {
		t.Fatalf("after message.max.bytes=100: got %v, want ErrMessageTooLarge", err)
	}
}

func TestProduceAcksAllBelowMinInsyncReplicasIsNotEnoughReplicas(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, map[string]string{"min.insync.replicas": "2"})
	p := tp("t", 0)
	if _, err := s.rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1000, 1), -1, time.Second); !errors.Is(err, replication.ErrNotEnoughReplicas) {
		t.Fatalf("acks=-1: got %v, want ErrNotEnoughReplicas", err)
	}
	if leo := s.rm.Get(p).Log().LogEndOffset(); leo != 0 {
		t.Fatalf("rejected acks=-1 produce appended: LEO %d", leo)
	}
	for _, acks := range []int16{1, 0} {
		if _, err := s.rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1000, 1), acks, time.Second); err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
	}
	// Lowering it lets acks=-1 through.
	if err := s.ctrl.SetTopicConfigs(context.Background(), "t", map[string]string{"min.insync.replicas": "1"}, false); err != nil {
		t.Fatal(err)
	}
	settle(t, s.ctrl)
	if _, err := s.rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1000, 1), -1, time.Second); err != nil {
		t.Fatalf("acks=-1 with min.insync.replicas=1: %v", err)
	}
}

func TestListOffset(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	mustProduce(t, s.rm, p, testkit.SimpleBatch(3, 1000, 1)) // offsets 0-2, ts 1000-1002
	mustProduce(t, s.rm, p, testkit.SimpleBatch(3, 2000, 1)) // offsets 3-5, ts 2000-2002
	for _, tc := range []struct {
		name            string
		ts              int64
		wantOff, wantTs int64
	}{
		{"latest", -1, 6, -1},
		{"earliest", -2, 0, -1},
		{"max timestamp", -3, 5, 2002},
		{"before everything", 0, 0, 1000},
		{"exact record", 1001, 1, 1001},
		{"inside a batch", 2002, 5, 2002},
		{"between batches", 1500, 3, 2000},
		{"future", 5000, -1, -1},
	} {
		off, ts, _, err := s.rm.ListOffset(p, tc.ts, -1, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if off != tc.wantOff || ts != tc.wantTs {
			t.Errorf("%s (%d): offset %d timestamp %d, want %d %d", tc.name, tc.ts, off, ts, tc.wantOff, tc.wantTs)
		}
	}
	if _, err := s.rm.DeleteRecords(p, 4); err != nil {
		t.Fatal(err)
	}
	if off, _, _, err := s.rm.ListOffset(p, -2, -1, false); err != nil || off != 4 {
		t.Fatalf("earliest after DeleteRecords(4): %d (%v), want 4", off, err)
	}
	if off, _, _, err := s.rm.ListOffset(p, 0, -1, false); err != nil || off != 4 {
		t.Fatalf("timestamp 0 after DeleteRecords(4): %d (%v), want 4", off, err)
	}
}

func TestDeleteRecords(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	for i := 0; i < 3; i++ {
		mustProduce(t, s.rm, p, testkit.SimpleBatch(3, int64(1000*i), 1)) // 0-2, 3-5, 6-8
	}
	low, err := s.rm.DeleteRecords(p, 4)
	if err != nil || low != 4 {
		t.Fatalf("DeleteRecords(4) = %d, %v; want 4", low, err)
	}
	if got := s.rm.Get(p).Log().LogStartOffset(); got != 4 {
		t.Fatalf("log start %d, want 4", got)
	}
	// Moving backwards keeps the current low watermark.
	if low, err := s.rm.DeleteRecords(p, 2); err != nil || low != 4 {
		t.Fatalf("DeleteRecords(2) = %d, %v; want 4", low, err)
	}
	if _, err := s.rm.DeleteRecords(p, 10); !errors.Is(err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("beyond HW: got %v, want ErrOffsetOutOfRange", err)
	}
	for _, off := range []int64{0, 3} {
		if r := fetchOne(s.rm, p, off); !errors.Is(r.Err, partition.ErrOffsetOutOfRange) {
			t.Fatalf("fetch at %d below log start: got %v, want ErrOffsetOutOfRange", off, r.Err)
		}
	}
	r := fetchOne(s.rm, p, 4)
	if r.Err != nil || r.LogStartOffset != 4 {
		t.Fatalf("fetch at log start: %v, log start %d", r.Err, r.LogStartOffset)
	}
	if hs := headers(t, r.Records); len(hs) == 0 || hs[0].LastOffset() < 4 {
		t.Fatalf("fetch at 4 returned %+v", hs)
	}
	// -1 means the high watermark.
	if low, err := s.rm.DeleteRecords(p, -1); err != nil || low != 9 {
		t.Fatalf("DeleteRecords(-1) = %d, %v; want 9", low, err)
	}
	if r := fetchOne(s.rm, p, 9); r.Err != nil || len(r.Records) != 0 || r.LogStartOffset != 9 {
		t.Fatalf("fetch at the emptied log's end: %+v", r)
	}
}

func TestDeleteTopicRemovesPartitionAndDirectory(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 2, nil)
	s.createTopic(t, "keep", 1, nil)
	mustProduce(t, s.rm, tp("t", 0), testkit.SimpleBatch(2, 1000, 10))
	mustProduce(t, s.rm, tp("keep", 0), testkit.SimpleBatch(2, 1000, 10))
	if errs := s.ctrl.DeleteTopics(context.Background(), []string{"t"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	settle(t, s.ctrl)
	for p := int32(0); p < 2; p++ {
		if s.rm.Get(tp("t", p)) != nil {
			t.Fatalf("partition %d still hosted", p)
		}
		if s.logs.Get(tp("t", p)) != nil {
			t.Fatalf("log of partition %d still open", p)
		}
		if _, err := s.rm.Produce(context.Background(), tp("t", p), testkit.SimpleBatch(1, 1, 1), 1, time.Second); !errors.Is(err, replication.ErrUnknownTopicOrPartition) {
			t.Fatalf("produce to deleted partition %d: got %v", p, err)
		}
		if r := fetchOne(s.rm, tp("t", p), 0); !errors.Is(r.Err, replication.ErrUnknownTopicOrPartition) {
			t.Fatalf("fetch from deleted partition %d: got %v", p, r.Err)
		}
	}
	names, err := os.ReadDir(s.logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n.Name(), "t-") {
			t.Fatalf("%s left in the log dir", n.Name())
		}
	}
	if !exists(t, filepath.Join(s.logDir, "keep-0")) || len(headers(t, fetchOne(s.rm, tp("keep", 0), 0).Records)) != 1 {
		t.Fatal("other topic's partition affected")
	}
	// Recreating the name starts an empty log.
	s.createTopic(t, "t", 1, nil)
	if r := fetchOne(s.rm, tp("t", 0), 0); r.Err != nil || len(r.Records) != 0 || r.HighWatermark != 0 {
		t.Fatalf("recreated topic: %+v", r)
	}
}

func TestNewManagerRemovesLogsOfTopicsNoLongerInMetadata(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "keep", 1, nil)
	mustProduce(t, s.rm, tp("keep", 0), testkit.SimpleBatch(2, 1000, 10))
	// A log the metadata knows nothing about, as left by a topic deleted
	// while this broker was down.
	orphan := tp("orphan", 0)
	lg, err := s.logs.GetOrCreate(orphan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Append(testkit.SimpleBatch(1, 1000, 10), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.logs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ctrl.Close(); err != nil {
		t.Fatal(err)
	}

	ctrl := openQuorum(t, testClusterConfig(), s.metaDir)
	logs := openLogs(t, partition.OSFS(), s.logDir, ctrl)
	t.Cleanup(func() { logs.Close() })
	if logs.Get(orphan) == nil {
		t.Fatal("orphan log not loaded from disk; the test setup is wrong")
	}
	rm := newManager(t, logs, ctrl)
	if logs.Get(orphan) != nil || rm.Get(orphan) != nil {
		t.Fatal("orphan log still open")
	}
	if exists(t, filepath.Join(s.logDir, orphan.String())) {
		t.Fatal("orphan log directory not removed")
	}
	// The topic that exists keeps its data and its high watermark.
	r := fetchOne(rm, tp("keep", 0), 0)
	if r.Err != nil || r.HighWatermark != 2 || len(headers(t, r.Records)) != 1 {
		t.Fatalf("kept topic after restart: err %v HW %d %d bytes", r.Err, r.HighWatermark, len(r.Records))
	}
}

// Kafka keeps the topic id in each partition directory (partition.metadata)
// and, on finding a log whose id differs from the metadata's, deletes it: a
// topic deleted and recreated under the same name while a broker was down
// must not serve the old topic's records.
func TestRestartDropsLogOfTopicRecreatedUnderSameName(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	mustProduce(t, s.rm, tp("t", 0), testkit.SimpleBatch(3, 1000, 10))
	if err := s.logs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ctrl.Close(); err != nil {
		t.Fatal(err)
	}
	// While the logs are closed (the broker down), the topic is deleted and
	// recreated through a controller that no replica manager follows.
	ctrl := openQuorum(t, testClusterConfig(), s.metaDir)
	if errs := ctrl.DeleteTopics(context.Background(), []string{"t"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if errs := ctrl.CreateTopics(context.Background(), []cluster.TopicSpec{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	logs := openLogs(t, partition.OSFS(), s.logDir, ctrl)
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, ctrl)
	if r := fetchOne(rm, tp("t", 0), 0); r.Err != nil || len(r.Records) != 0 || r.HighWatermark != 0 {
		t.Fatalf("new topic serves the old one's log: HW %d, %d bytes, err %v", r.HighWatermark, len(r.Records), r.Err)
	}
}

// With a follower in the ISR the leader's appends are not committed until
// the follower has them: consumers read only below the high watermark, and
// ListOffsets answers from it.
func TestConsumersSeeOnlyBelowHighWatermark(t *testing.T) {
	_, rm := newFakeStack(t, imageWith(1, 0, 1, 2))
	p := tp("t", 0)
	if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(2, 1000, 1), 1, time.Second); err != nil {
		t.Fatal(err)
	}
	lg := rm.Get(p).Log()
	if lg.LogEndOffset() != 2 || lg.HighWatermark() != 0 {
		t.Fatalf("LEO %d HW %d, want 2 0 with a follower that has not fetched", lg.LogEndOffset(), lg.HighWatermark())
	}
	r := fetchOne(rm, p, 0)
	if r.Err != nil || len(r.Records) != 0 || r.HighWatermark != 0 {
		t.Fatalf("consumer fetch: err %v, %d bytes, HW %d; want nothing above the HW", r.Err, len(r.Records), r.HighWatermark)
	}
	if off, _, _, err := rm.ListOffset(p, -1, -1, false); err != nil || off != 0 {
		t.Fatalf("latest offset %d (%v), want the HW 0", off, err)
	}
	if off, _, _, err := rm.ListOffset(p, 1000, -1, false); err != nil || off != -1 {
		t.Fatalf("offset for a timestamp above the HW: %d (%v), want -1", off, err)
	}
	if _, err := rm.DeleteRecords(p, 1); !errors.Is(err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecords above the HW: got %v, want ErrOffsetOutOfRange", err)
	}
}

// acks=all completes only once the whole ISR has the batch (the high
// watermark passes it), or fails with REQUEST_TIMED_OUT after the produce
// timeout.
func TestProduceAcksAllWaitsForTheISR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rm := newFakeStack(t, imageWith(1, 0, 1, 2))
		_, err := rm.Produce(context.Background(), tp("t", 0), testkit.SimpleBatch(1, 1000, 1), -1, time.Second)
		if !errors.Is(err, replication.ErrRequestTimedOut) {
			t.Fatalf("got %v, want ErrRequestTimedOut with the HW still at 0", err)
		}
	})
}

// A fetch parked over many partitions waits on one shared notification,
// not on a goroutine per partition, and any of them wakes it.
func TestParkedFetchOverManyPartitionsStartsNoGoroutinePerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		im := imageWith(1, 0, 1)
		top := im.Topics["t"]
		for p := int32(1); p < n; p++ {
			pi := top.Partitions[0]
			pi.Partition = p
			top.Partitions = append(top.Partitions, pi)
		}
		_, rm := newFakeStack(t, im)
		synctest.Wait()
		idle := runtime.NumGoroutine()
		done := make(chan []replication.FetchResult, 1)
		go func() {
			fp := replication.FetchParams{MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Hour}
			for p := int32(0); p < n; p++ {
				fp.Partitions = append(fp.Partitions, replication.FetchPartition{TP: tp("t", p), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
			}
			done <- rm.Fetch(context.Background(), fp)
		}()
		synctest.Wait()
		if parked := runtime.NumGoroutine() - idle; parked > 1 {
			t.Fatalf("a fetch parked over %d partitions runs %d goroutines, want 1", n, parked)
		}
		mustProduce(t, rm, tp("t", 77), testkit.SimpleBatch(1, 1000, 5))
		synctest.Wait()
		select {
		case res := <-done:
			if hs := headers(t, res[77].Records); len(hs) != 1 {
				t.Fatalf("partition 77 returned %+v", hs)
			}
		default:
			t.Fatal("produce to partition 77 did not wake the fetch")
		}
	})
}

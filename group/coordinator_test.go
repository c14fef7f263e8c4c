package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
)

// offsetsImage is a one-broker cluster whose node 1 leads every partition
// of a one-partition __consumer_offsets.
func offsetsImage(leader, epoch int32) *cluster.Image {
	return &cluster.Image{
		Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1, Host: "127.0.0.1", Port: 9092}},
		Topics: map[string]*cluster.TopicInfo{OffsetsTopic: {Name: OffsetsTopic, ID: cluster.TopicID{1}, Partitions: []cluster.PartitionInfo{
			{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1}, ISR: []int32{1}},
		}}},
	}
}

func newTestCoordinator(t *testing.T, meta *fake.Meta, lg *fake.Log) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	c, err := New(cfg, meta, lg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitLoaded waits until the coordinator answers for the group; loading
// is asynchronous and has no signal of its own.
func waitLoaded(t *testing.T, c *Coordinator, groupID string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		_, err := c.validateGroup(groupID, true)
		if err != nil && !errors.Is(err, ErrCoordinatorLoading) {
			t.Fatalf("group %s not served: %v", groupID, err)
		}
		return err
	})
}

func appendRecords(t *testing.T, lg *fake.Log, recs ...record) {
	t.Helper()
	if err := lg.Append(context.Background(), TopicPartition{Topic: OffsetsTopic}, buildBatch(recs, 1), 0); err != nil {
		t.Fatal(err)
	}
}

func TestLoadAppliesTombstones(t *testing.T) {
	lg := fake.NewLog()
	tp := func(p int32) TopicPartition { return TopicPartition{Topic: "orders", Partition: p} }
	off := func(o int64) []byte {
		return encodeOffsetValue(OffsetAndMetadata{Offset: o, LeaderEpoch: -1, CommitTimestamp: 1, ExpireTimestamp: -1})
	}
	stable := &groupValue{ProtocolType: "consumer", Generation: 3, Protocol: strp("range"), Leader: strp("m1"), Members: []memberValue{
		{MemberID: "m1", ClientID: "c", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000, Subscription: []byte("s"), Assignment: []byte("a")},
	}}
	appendRecords(t, lg,
		record{offsetKey("g1", tp(0)), off(10)},
		record{offsetKey("g1", tp(1)), off(11)},
		record{groupKey("g2"), encodeGroupValue(&groupValue{ProtocolType: "consumer", Generation: 1})},
		record{offsetKey("g2", tp(0)), plainCommit(20)},
	)
	appendRecords(t, lg,
		record{offsetKey("g1", tp(0)), off(12)}, // a later commit wins
		record{offsetKey("g1", tp(1)), nil},     // offset deleted
		record{groupKey("g2"), nil},             // group deleted...
		record{offsetKey("g2", tp(0)), nil},     // ...with its offsets
		record{groupKey("g3"), encodeGroupValue(stable)},
	)

	c := newTestCoordinator(t, fake.NewMeta(1, offsetsImage(1, 0)), lg)
	waitLoaded(t, c, "g1")

	got, err := c.FetchOffsets("g1", nil)
	if err != nil || len(got) != 1 || got[0].TP != tp(0) || got[0].Offset != 12 {
		t.Fatalf("g1 offsets: %+v %v; want only orders-0 at 12", got, err)
	}
	if s, err := c.DescribeGroup("g2"); err != nil || s.State != StateDead {
		t.Fatalf("g2: %+v %v; want Dead (deleted)", s, err)
	}
	if got, _ := c.FetchOffsets("g2", []TopicPartition{tp(0)}); got[0].Offset != -1 {
		t.Fatalf("g2 offset after tombstone: %+v", got)
	}
	s, err := c.DescribeGroup("g3")
	if err != nil || s.State != StateStable || len(s.Members) != 1 || string(s.Members[0].Assignment) != "a" || s.Protocol != "range" {
		t.Fatalf("g3: %+v %v; want Stable with m1 assigned a", s, err)
	}
	if err := c.Heartbeat("g3", "m1", nil, 3); err != nil {
		t.Fatalf("heartbeat of a loaded member: %v", err)
	}
}

func TestCommitIsAcknowledgedAfterAppendAndSurvivesReload(t *testing.T) {
	lg := fake.NewLog()
	meta := fake.NewMeta(1, offsetsImage(1, 0))
	c := newTestCoordinator(t, meta, lg)
	waitLoaded(t, c, "g")
	tp := TopicPartition{Topic: "orders", Partition: 0}
	commit := func() []error {
		return c.CommitOffsets(context.Background(), "g", CommitParams{Generation: -1, Offsets: []CommitOffset{
			{TP: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: 5, LeaderEpoch: -1, Metadata: "x", ExpireTimestamp: -1}},
		}})
	}

	lg.FailAppends(fmt.Errorf("append: %w", partition.ErrLogClosed))
	if errs := commit(); !errors.Is(errs[0], ErrNotCoordinator) {
		t.Fatalf("commit with a failing log: %v, want NOT_COORDINATOR", errs)
	}
	if got, _ := c.FetchOffsets("g", []TopicPartition{tp}); got[0].Offset != -1 {
		t.Fatalf("offset visible although its append failed: %+v", got)
	}

	lg.FailAppends(nil)
	if errs := commit(); errs[0] != nil {
		t.Fatalf("commit: %v", errs)
	}

	// Leadership moves away and back (new epoch): the group is unloaded,
	// then rebuilt from the log.
	meta.Publish(offsetsImage(2, 1))
	if _, err := c.FetchOffsets("g", nil); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("fetch after losing leadership: %v, want NOT_COORDINATOR", err)
	}
	meta.Publish(offsetsImage(1, 2))
	waitLoaded(t, c, "g")
	got, err := c.FetchOffsets("g", []TopicPartition{tp})
	if err != nil || got[0].Offset != 5 || got[0].Metadata != "x" {
		t.Fatalf("offset after reload: %+v %v; want 5 with metadata x", got, err)
	}
}

func TestExpireOffsetsOfEmptyGroupWritesTombstones(t *testing.T) {
	lg := fake.NewLog()
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := DefaultConfig()
	c, err := New(cfg, fake.NewMeta(1, offsetsImage(1, 0)), lg, zerolog.Nop(), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitLoaded(t, c, "g")
	tp := TopicPartition{Topic: "orders", Partition: 0}
	errs := c.CommitOffsets(context.Background(), "g", CommitParams{Generation: -1, Offsets: []CommitOffset{
		{TP: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: 5, LeaderEpoch: -1, CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}},
	}})
	if errs[0] != nil {
		t.Fatal(errs)
	}
	if o, g := c.ExpireOffsets(); o != 0 || g != 0 {
		t.Fatalf("expired %d offsets, %d groups before retention passed", o, g)
	}
	mu.Lock()
	now = now.Add(cfg.OffsetsRetention)
	mu.Unlock()
	if o, g := c.ExpireOffsets(); o != 1 || g != 1 {
		t.Fatalf("expired %d offsets, %d groups after retention; want 1 and 1", o, g)
	}
	if s, _ := c.DescribeGroup("g"); s.State != StateDead {
		t.Fatalf("group state %v after expiry, want Dead", s.State)
	}
	// The tombstones reach the log: a fresh coordinator finds nothing.
	if _, err := lg.WaitEnd(TopicPartition{Topic: OffsetsTopic}, 3, 10*time.Second); err != nil {
		t.Fatalf("tombstones not written: %v", err)
	}
	c2 := newTestCoordinator(t, fake.NewMeta(1, offsetsImage(1, 0)), lg)
	waitLoaded(t, c2, "g")
	if got, _ := c2.FetchOffsets("g", nil); len(got) != 0 {
		t.Fatalf("offsets after reload: %+v, want none", got)
	}
}

func TestLoadSkipsAMalformedBatchAndKeepsLoadingLaterCommits(t *testing.T) {
	lg, otp, orders := fake.NewLog(), TopicPartition{Topic: OffsetsTopic}, TopicPartition{Topic: "orders", Partition: 0}
	appendRecords(t, lg, record{offsetKey("g", orders), plainCommit(10)})
	// A batch that claims two records but holds one: its second record's
	// length cannot be read.
	bad := buildBatch([]record{{offsetKey("g", orders), plainCommit(99)}}, 1)
	binary.BigEndian.PutUint32(bad[57:], 2)
	lg.Put(otp, bad) // unchecked: a log a hostile or buggy writer left behind
	appendRecords(t, lg, record{offsetKey("g", orders), plainCommit(30)})
	appendRecords(t, lg, record{offsetKey("g2", orders), plainCommit(40)})

	c := newTestCoordinator(t, fake.NewMeta(1, offsetsImage(1, 0)), lg)
	waitLoaded(t, c, "g")
	if got, err := c.FetchOffsets("g", []TopicPartition{orders}); err != nil || got[0].Offset != 30 {
		t.Fatalf("g offset: %+v %v; want the commit after the malformed batch (30)", got, err)
	}
	if got, err := c.FetchOffsets("g2", []TopicPartition{orders}); err != nil || got[0].Offset != 40 {
		t.Fatalf("g2 offset: %+v %v; want 40", got, err)
	}
}

// gzipBatch recompresses an uncompressed batch's records with gzip, as a
// producer's compressed batch holds them.
func gzipBatch(t *testing.T, batch []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(batch[partition.BatchHeaderSize:]); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), batch[:partition.BatchHeaderSize]...), buf.Bytes()...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[21:], binary.BigEndian.Uint16(out[21:])|uint16(partition.CompressionGzip))
	testkit.FixCRC(out)
	return out
}

func TestLoadReadsCompressedBatches(t *testing.T) {
	lg, otp, orders := fake.NewLog(), TopicPartition{Topic: OffsetsTopic}, TopicPartition{Topic: "orders", Partition: 0}
	appendRecords(t, lg, record{offsetKey("g", orders), plainCommit(10)})
	lg.Put(otp, gzipBatch(t, buildBatch([]record{{offsetKey("g", orders), plainCommit(20)}, {offsetKey("g2", orders), plainCommit(25)}}, 1)))

	c := newTestCoordinator(t, fake.NewMeta(1, offsetsImage(1, 0)), lg)
	waitLoaded(t, c, "g")
	if got, err := c.FetchOffsets("g", []TopicPartition{orders}); err != nil || got[0].Offset != 20 {
		t.Fatalf("g offset: %+v %v; want the compressed batch's commit (20)", got, err)
	}
	if got, err := c.FetchOffsets("g2", []TopicPartition{orders}); err != nil || got[0].Offset != 25 {
		t.Fatalf("g2 offset: %+v %v; want 25", got, err)
	}
}

// plainCommit is the value of a commit of offset o with no leader epoch,
// metadata or expiry.
func plainCommit(o int64) []byte {
	return encodeOffsetValue(OffsetAndMetadata{Offset: o, LeaderEpoch: -1, CommitTimestamp: 1, ExpireTimestamp: -1})
}

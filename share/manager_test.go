package share

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
)

// The partition side's sessions, acknowledgements, releases and long-poll
// against an in-memory log; the clock is a counter the test moves.

var testTopicID = cluster.TopicID{1, 2, 3}

func newFakeMeta(groupConfigs map[string]string) *fake.Meta {
	return fake.NewMeta(1, &cluster.Image{
		Topics: map[string]*cluster.TopicInfo{"t": {Name: "t", ID: testTopicID,
			Partitions: []cluster.PartitionInfo{{Partition: 0, Leader: 1, LeaderEpoch: 0}}}},
		IDs:          map[cluster.TopicID]string{testTopicID: "t"},
		GroupConfigs: map[string]map[string]string{"g": groupConfigs},
	})
}

// appendRecords writes a batch of n records (a transaction marker when
// control) to partition t-0, moving its high watermark past it; Put gives
// it its base offset.
func appendRecords(l *fake.Log, n int, control bool) {
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), NumRecords: int32(n), Records: make([]byte, n)}
	if control {
		rb.Attributes = 0x20
	}
	b := rb.AppendTo(nil)
	rb.Length = int32(len(b) - 12)
	l.Put(logTP, rb.AppendTo(nil))
}

// logTP is the partition the tests share.
var logTP = partition.TopicPartition{Topic: "t", Partition: 0}

type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func newTestManager(t *testing.T, groupConfigs map[string]string) (*Manager, *fake.Log, *fake.Meta, *clock) {
	t.Helper()
	meta := newFakeMeta(groupConfigs)
	log := fake.NewLog()
	cfg := DefaultConfig()
	cfg.CheckpointInterval = time.Hour // the test calls checkpoint itself
	clk := &clock{}
	clk.ms.Store(1_000_000)
	m := NewManager(cfg, meta, log, zerolog.Nop(), WithClock(clk.now))
	t.Cleanup(m.Close)
	return m, log, meta, clk
}

var tp0 = TP{ID: testTopicID, Partition: 0}

func fetch(t *testing.T, m *Manager, member string, epoch int32, acks ...PartitionAcks) ([]AcquiredRange, error) {
	t.Helper()
	res, err := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: member, SessionEpoch: epoch, Partitions: []TP{tp0}, Acks: acks, MaxRecords: 100})
	if err != nil {
		return nil, err
	}
	var out []AcquiredRange
	for _, r := range res {
		if r.Err != nil || r.AckErr != nil {
			return nil, errors.Join(r.Err, r.AckErr)
		}
		out = append(out, r.Acquired...)
	}
	return out, nil
}

func TestManagerSessionLifecycle(t *testing.T) {
	m, log, _, _ := newTestManager(t, map[string]string{"share.auto.offset.reset": "earliest"})
	appendRecords(log, 10, false)

	got, err := fetch(t, m, "a", 0)
	if err != nil || !slices.Equal(got, []AcquiredRange{{0, 9, 1}}) {
		t.Fatalf("first fetch: %v %v", got, err)
	}
	if got, err := fetch(t, m, "a", 1); err != nil || len(got) != 0 {
		t.Fatalf("second fetch: %v %v (everything is acquired)", got, err)
	}
	if _, err := fetch(t, m, "a", 7); !errors.Is(err, ErrInvalidSessionEpoch) {
		t.Fatalf("wrong epoch: %v", err)
	}
	if _, err := fetch(t, m, "nobody", 3); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("no session: %v", err)
	}
	if _, err := fetch(t, m, "a", 0, PartitionAcks{TP: tp0, Batches: accept(0, 0)}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("acknowledgements when opening a session: %v", err)
	}
	// The refused requests left the session as it was, expecting epoch 2.
	res, err := m.Acknowledge(AckRequest{Group: "g", Member: "a", SessionEpoch: 2, Acks: []PartitionAcks{{TP: tp0, Batches: accept(0, 4)}}})
	if err != nil || res[0].AckErr != nil {
		t.Fatalf("acknowledge: %v %+v", err, res)
	}
	// Closing the session releases what the member still holds.
	if _, err := m.Acknowledge(AckRequest{Group: "g", Member: "a", SessionEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	got, err = fetch(t, m, "b", 0)
	if err != nil || !slices.Equal(got, []AcquiredRange{{5, 9, 2}}) {
		t.Fatalf("after the close: %v %v, want 5-9 delivered a second time", got, err)
	}
}

func TestManagerDisconnectReleases(t *testing.T) {
	m, log, _, _ := newTestManager(t, map[string]string{"share.auto.offset.reset": "earliest"})
	appendRecords(log, 3, false)
	conn, drop := context.WithCancel(context.Background())
	res, err := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Conn: conn, Partitions: []TP{tp0}, MaxRecords: 10})
	if err != nil || len(res) != 1 || len(res[0].Acquired) != 1 {
		t.Fatalf("fetch: %+v %v", res, err)
	}
	drop()
	// The release runs after the connection's context ends; a parked
	// fetch of another member is woken by it.
	res, err = m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "b", Partitions: []TP{tp0}, MaxRecords: 10, MaxWait: time.Minute})
	if err != nil || len(res) != 1 || !slices.Equal(res[0].Acquired, []AcquiredRange{{0, 2, 2}}) {
		t.Fatalf("after the disconnect: %+v %v", res, err)
	}
}

func TestManagerLongPollWakesOnAppend(t *testing.T) {
	m, log, _, _ := newTestManager(t, nil) // latest: starts at the high watermark
	appendRecords(log, 5, false)
	done := make(chan []PartitionResult)
	go func() {
		res, _ := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Partitions: []TP{tp0}, MaxRecords: 10, MaxWait: time.Minute})
		done <- res
	}()
	// Wait until the fetch has built its share partition (at offset 5),
	// then write.
	testkit.Eventually(t, 10*time.Second, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.mu.parts[stateKey{"g", "t", 0}] == nil {
			return errors.New("the fetch has not built its share partition")
		}
		return nil
	})
	appendRecords(log, 2, false)
	res := <-done
	if len(res) != 1 || !slices.Equal(res[0].Acquired, []AcquiredRange{{5, 6, 1}}) {
		t.Fatalf("woken fetch: %+v (latest must skip the 5 records written before)", res)
	}
}

func TestManagerLockExpiryAndMarkers(t *testing.T) {
	m, log, _, clk := newTestManager(t, map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "5000"})
	appendRecords(log, 2, false)
	appendRecords(log, 1, true) // a transaction marker at offset 2
	appendRecords(log, 2, false)
	got, err := fetch(t, m, "a", 0)
	if err != nil || !slices.Equal(got, []AcquiredRange{{0, 1, 1}, {3, 4, 1}}) {
		t.Fatalf("fetch: %v %v (the marker is never delivered)", got, err)
	}
	clk.ms.Add(4999)
	m.expire()
	if got, _ := fetch(t, m, "b", 0); len(got) != 0 {
		t.Fatalf("acquired %v before the lock expired", got)
	}
	clk.ms.Add(1)
	m.expire()
	got, err = fetch(t, m, "b", 1)
	if err != nil || !slices.Equal(got, []AcquiredRange{{0, 1, 2}, {3, 4, 2}}) {
		t.Fatalf("after expiry: %v %v", got, err)
	}
	// The first member's late acknowledgement is refused per partition.
	res, err := m.Acknowledge(AckRequest{Group: "g", Member: "a", SessionEpoch: 1, Acks: []PartitionAcks{{TP: tp0, Batches: accept(0, 1)}}})
	if err != nil || !errors.Is(res[0].AckErr, ErrInvalidRecordState) {
		t.Fatalf("late acknowledgement: %+v %v", res, err)
	}
}

func TestManagerCheckpoint(t *testing.T) {
	m, log, meta, _ := newTestManager(t, map[string]string{"share.auto.offset.reset": "earliest"})
	appendRecords(log, 4, false)
	if _, err := fetch(t, m, "a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(t, m, "a", 1, PartitionAcks{TP: tp0, Batches: accept(0, 2)}); err != nil {
		t.Fatal(err)
	}
	m.checkpoint()
	changes := meta.ShareChanges()
	if len(changes) != 1 || changes[0].Reset || changes[0].Offsets["t"][0] != 3 {
		t.Fatalf("checkpoints %+v, want one with start offset 3", changes)
	}
	// Nothing moved since: no new checkpoint.
	m.checkpoint()
	if n := len(meta.ShareChanges()); n != 1 {
		t.Errorf("%d checkpoints, want 1", n)
	}

	// A new leader (a fresh manager on the same metadata) starts at the
	// checkpoint, not by the reset policy.
	meta.Edit(func(im *cluster.Image) {
		im.ShareGroups = map[string]*cluster.ShareGroupState{"g": {Offsets: map[string]map[int32]int64{"t": {0: 3}}}}
	})
	m2 := NewManager(DefaultConfig(), meta, log, zerolog.Nop())
	defer m2.Close()
	got, err := fetch(t, m2, "b", 0)
	if err != nil || !slices.Equal(got, []AcquiredRange{{3, 3, 1}}) {
		t.Fatalf("new leader: %v %v, want offset 3 only", got, err)
	}
}

// batchAt builds a record batch of n records at base, transactional for
// producer pid when pid >= 0.
func batchAt(base int64, n int, pid int64) []byte {
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, LastOffsetDelta: int32(n - 1), NumRecords: int32(n), Records: make([]byte, n), ProducerID: -1}
	if pid >= 0 {
		rb.Attributes, rb.ProducerID = 0x10, pid
	}
	b := rb.AppendTo(nil)
	rb.Length = int32(len(b) - 12)
	return rb.AppendTo(nil)
}

func TestSpansUnderEachIsolationLevel(t *testing.T) {
	marker := partition.ControlBatch(7, 0, 0, false, 0) // abort of producer 7
	binaryPutBase(marker, 2)
	var log []byte
	log = append(log, batchAt(0, 2, 7)...) // aborted transaction
	log = append(log, marker...)
	log = append(log, batchAt(3, 2, -1)...)
	log = append(log, batchAt(5, 1, 8)...) // producer 8's transaction, not aborted
	aborted := []idempotent.TxnRange{{ProducerID: 7, FirstOffset: 0, LastOffset: 2}}

	committed, bounds := spansOf(log, aborted, true)
	want := []Span{{0, 1, true}, {2, 2, true}, {3, 4, false}, {5, 5, false}}
	if !slices.Equal(committed, want) {
		t.Fatalf("read_committed spans %v, want %v", committed, want)
	}
	if len(bounds) != 5 || bounds[4] != len(log) {
		t.Fatalf("bounds %v for %d bytes", bounds, len(log))
	}
	uncommitted, _ := spansOf(log, nil, false)
	want = []Span{{0, 1, false}, {2, 2, true}, {3, 4, false}, {5, 5, false}}
	if !slices.Equal(uncommitted, want) {
		t.Fatalf("read_uncommitted spans %v, want %v", uncommitted, want)
	}
}

func binaryPutBase(b []byte, base int64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(base >> (56 - 8*i))
	}
}

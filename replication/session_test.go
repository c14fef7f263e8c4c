package replication_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// sessionLeader leads "t-0" with follower 2 in the ISR, on a clock the
// test moves; its AlterPartition calls are collected.
type sessionLeader struct {
	rm *replication.Manager

	mu     sync.Mutex
	now    time.Time
	alters [][]int32
}

func newSessionLeader(t *testing.T) *sessionLeader {
	t.Helper()
	l := &sessionLeader{now: time.Unix(1000, 0)}
	meta := fake.NewMeta(nodeID, imageWith(1, 0, 1, 2))
	meta.Alter = func(req cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
		l.mu.Lock()
		l.alters = append(l.alters, req.NewISR)
		l.mu.Unlock()
		return cluster.PartitionInfo{}, cluster.ErrInvalidRequest
	}
	logs := openLogs(t, partition.NewMemFS(), "/logs", meta)
	t.Cleanup(func() { logs.Close() })
	cfg := replication.DefaultConfig()
	cfg.NodeID = nodeID
	rm, err := replication.NewManagerWithConfig(cfg, logs, meta, zerolog.Nop(), replication.WithClock(l.clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	l.rm = rm
	return l
}

func (l *sessionLeader) clock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func (l *sessionLeader) advance(d time.Duration) {
	l.mu.Lock()
	l.now = l.now.Add(d)
	l.mu.Unlock()
}

// proposals are the ISR changes proposed so far, once every proposal
// made has been sent (the test runs in a synctest bubble).
func (l *sessionLeader) proposals() [][]int32 {
	synctest.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]int32(nil), l.alters...)
}

func (l *sessionLeader) produce(t *testing.T) {
	t.Helper()
	if _, err := l.rm.Produce(context.Background(), tp("t", 0), testkit.SimpleBatch(1, 1000, 1), 1, time.Second); err != nil {
		t.Fatal(err)
	}
}

// sessionRound is one fetch of follower 2's session w, reading parts at
// offset, without waiting.
func (l *sessionLeader) sessionRound(w *replication.SessionWatch, offset int64, parts ...int32) []replication.FetchResult {
	fp := replication.FetchParams{MaxBytes: 1 << 20, FromFollower: true, ReplicaID: 2, ReplicaEpoch: -1, Session: w}
	for _, p := range parts {
		fp.Partitions = append(fp.Partitions, replication.FetchPartition{TP: tp("t", p), Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1})
	}
	return l.rm.Fetch(context.Background(), fp)
}

// Kafka reads every partition of a follower's session on each fetch and
// records the ones with nothing new as fetched at the log end. A session
// fetch that leaves an idle partition out must count the same way: a
// follower that goes on fetching through its session stays in the ISR
// when a record finally arrives long after it last fetched the partition
// itself.
func TestIdleFollowerSessionKeepsFollowerInISR(t *testing.T) {
	synctest.Test(t, testIdleFollowerSessionKeepsFollowerInISR)
}

func testIdleFollowerSessionKeepsFollowerInISR(t *testing.T) {
	l := newSessionLeader(t)
	l.produce(t)
	w := l.rm.NewSessionWatch(2)
	defer w.Close()
	res := l.sessionRound(w, 1, 0)
	if res[0].Err != nil || !res[0].Settled {
		t.Fatalf("follower at the log end and in the ISR: %+v, want settled", res[0])
	}
	for range 10 {
		l.advance(10 * time.Second) // 100 s in all, replica.lag.time.max.ms is 30 s
		l.sessionRound(w, 1)        // nothing changed: the fetch names nothing
	}
	l.advance(time.Second)
	l.produce(t)
	l.advance(time.Millisecond)
	l.rm.CheckISRs()
	if p := l.proposals(); len(p) != 0 {
		t.Fatalf("follower fetching through its session was dropped from the ISR: %v", p)
	}
}

// A follower that stops fetching still leaves the ISR
// replica.lag.time.max.ms after its session's last fetch, once the leader
// has records it lacks.
func TestFollowerWhoseSessionStopsFetchingLeavesISR(t *testing.T) {
	synctest.Test(t, testFollowerWhoseSessionStopsFetchingLeavesISR)
}

func testFollowerWhoseSessionStopsFetchingLeavesISR(t *testing.T) {
	l := newSessionLeader(t)
	l.produce(t)
	w := l.rm.NewSessionWatch(2)
	defer w.Close()
	l.sessionRound(w, 1, 0)
	for range 3 {
		l.advance(10 * time.Second)
		l.sessionRound(w, 1)
	}
	// The follower stops fetching.
	l.advance(20 * time.Second)
	l.produce(t)
	l.rm.CheckISRs()
	if p := l.proposals(); len(p) != 0 {
		t.Fatalf("shrunk 20 s after the session's last fetch: %v", p)
	}
	l.advance(11 * time.Second)
	l.rm.CheckISRs()
	p := l.proposals()
	if len(p) == 0 || len(p[0]) != 1 || p[0][0] != 1 {
		t.Fatalf("proposals %v, want the ISR shrunk to [1] 31 s after the session's last fetch", p)
	}
}

// A session fetch with nothing to read parks on the session's watch, and
// a record produced to one partition among many wakes it at once; the
// fetch then reads that partition (and only it), recording the
// follower's position there.
func TestSessionFetchIsWokenByAChangeToOnePartitionAmongMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		im := imageWith(1, 0, 1, 2)
		top := im.Topics["t"]
		for p := int32(1); p < n; p++ {
			pi := top.Partitions[0]
			pi.Partition = p
			top.Partitions = append(top.Partitions, pi)
		}
		_, rm := newFakeStack(t, im)
		w := rm.NewSessionWatch(2)
		defer w.Close()
		// The session's opening fetch reads every partition.
		fp := replication.FetchParams{MaxBytes: 1 << 20, FromFollower: true, ReplicaID: 2, ReplicaEpoch: -1, Session: w}
		for p := int32(0); p < n; p++ {
			fp.Partitions = append(fp.Partitions, replication.FetchPartition{TP: tp("t", p), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1})
		}
		for i, r := range rm.Fetch(context.Background(), fp) {
			if r.Err != nil || !r.Settled {
				t.Fatalf("partition %d: %+v, want settled", i, r)
			}
		}
		w.TakeDirty(func(partition.TopicPartition) {})

		var more []partition.TopicPartition
		done := make(chan []replication.FetchResult, 1)
		go func() {
			done <- rm.Fetch(context.Background(), replication.FetchParams{
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Hour, FromFollower: true, ReplicaID: 2, ReplicaEpoch: -1, Session: w,
				More: func() ([]replication.FetchPartition, bool) {
					var extra []replication.FetchPartition
					w.TakeDirty(func(tp partition.TopicPartition) {
						more = append(more, tp)
						extra = append(extra, replication.FetchPartition{TP: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1})
					})
					return extra, len(extra) > 0
				},
			})
		}()
		synctest.Wait()
		if _, err := rm.Produce(context.Background(), tp("t", 77), testkit.SimpleBatch(1, 1000, 5), 1, time.Second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case res := <-done:
			if len(more) != 1 || more[0] != tp("t", 77) || len(res) != 1 {
				t.Fatalf("read %v (%d results), want t-77 alone", more, len(res))
			}
			if hs := headers(t, res[0].Records); len(hs) != 1 {
				t.Fatalf("partition 77 returned %+v", hs)
			}
		default:
			t.Fatal("produce to partition 77 did not wake the session's fetch")
		}
	})
}

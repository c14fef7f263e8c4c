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

// hookClock is a fixed clock that runs fn, once, at its at-th reading
// after arm: a way to change the broker's state at a chosen point inside
// a fetch.
type hookClock struct {
	mu    sync.Mutex
	now   time.Time
	calls int
	at    int
	fn    func()
}

func (c *hookClock) Now() time.Time {
	c.mu.Lock()
	c.calls++
	var fn func()
	if c.fn != nil && c.calls == c.at {
		fn, c.fn = c.fn, nil
	}
	now := c.now
	c.mu.Unlock()
	if fn != nil {
		fn()
	}
	return now
}

func (c *hookClock) arm(at int, fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.at, c.fn = 0, at, fn
}

// A follower may apply a new topic before its leader does and name the
// topic's partitions in its session while the leader is still creating
// them. A partition that the leader creates and starts leading while such
// a fetch is under way, after the fetch began but before it reads that
// partition, is read fine (the follower at its log end, in the ISR:
// settled, so the session's next fetches leave it out); the session's
// watch must then see the partition's first append, or the follower never
// fetches that record until the ISR drops it.
func TestSessionWatchSeesPartitionCreatedDuringItsFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		im := imageWith(1, 0, 1, 2)
		meta := fake.NewMeta(nodeID, im)
		logs := openLogs(t, partition.NewMemFS(), "/logs", meta)
		t.Cleanup(func() { logs.Close() })
		clk := &hookClock{now: time.Unix(1000, 0)}
		cfg := replication.DefaultConfig()
		cfg.NodeID = nodeID
		rm, err := replication.NewManagerWithConfig(cfg, logs, meta, zerolog.Nop(), replication.WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rm.Close)

		// Topic "u", led here with follower 2 in the ISR, as the
		// controller created it; this broker has not applied it yet.
		next := *im
		next.Topics = map[string]*cluster.TopicInfo{"t": im.Topics["t"]}
		next.IDs = map[cluster.TopicID]string{im.Topics["t"].ID: "t"}
		u := &cluster.TopicInfo{Name: "u", ID: cluster.TopicID{2}, Partitions: []cluster.PartitionInfo{{
			Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
		}}}
		next.Topics["u"], next.IDs[u.ID] = u, "u"

		w := rm.NewSessionWatch(2)
		defer w.Close()
		fp := replication.FetchParams{MaxBytes: 1 << 20, FromFollower: true, ReplicaID: 2, ReplicaEpoch: -1, Session: w}
		for _, p := range []partition.TopicPartition{tp("t", 0), tp("u", 0)} {
			fp.Partitions = append(fp.Partitions, replication.FetchPartition{TP: p, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1})
		}
		// The fetch's clock readings: its start, then its record of
		// the follower's position in t-0, when "u" gets applied.
		clk.arm(2, func() { meta.Publish(&next) })
		res := rm.Fetch(context.Background(), fp)
		if rm.Get(tp("u", 0)) == nil || res[1].Err != nil || !res[1].Settled {
			t.Fatalf("u-0 read %+v, want created during the fetch and read settled", res[1])
		}
		w.TakeDirty(func(partition.TopicPartition) {})

		if _, err := rm.Produce(context.Background(), tp("u", 0), testkit.SimpleBatch(1, 1000, 1), 1, time.Second); err != nil {
			t.Fatal(err)
		}
		var dirty []partition.TopicPartition
		w.TakeDirty(func(p partition.TopicPartition) { dirty = append(dirty, p) })
		if len(dirty) != 1 || dirty[0] != tp("u", 0) {
			t.Fatalf("session saw %v change after the append to u-0, want [u-0]", dirty)
		}
	})
}

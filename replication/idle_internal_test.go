package replication

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/rs/zerolog"
)

// Every role change loads the producer state in the background so that it
// is ready by the first idempotent produce. Once it is in place the load
// is over: a partition that then stays idle (most of 10,000) keeps
// neither the finished load nor its channel.
func TestIdlePartitionKeepsNoFinishedProducerLoad(t *testing.T) {
	fs := partition.NewMemFS()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	lg, err := partition.Open(fs, "/data", tp, partition.DefaultConfig(), zerolog.Nop(), partition.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	logger := zerolog.Nop()
	p := &Partition{TP: tp, log: lg, env: &partitionEnv{now: time.Now, log: &logger, spawn: func(load func(context.Context)) bool {
		go load(context.Background())
		return true
	}}}
	p.startProducerLoad()
	p.prod.mu.Lock()
	ld := p.prod.load
	p.prod.mu.Unlock()
	if ld == nil {
		t.Fatal("no load started")
	}
	select {
	case <-ld.done:
	case <-time.After(10 * time.Second): // a watchdog against a hang only
		t.Fatal("load did not end")
	}
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	if p.prod.st == nil {
		t.Fatalf("state not installed (load error %v)", ld.err)
	}
	if p.prod.load != nil {
		t.Fatal("the finished load is still kept")
	}
	if p.prod.st.Len() != 0 {
		t.Fatalf("%d producers in an empty log", p.prod.st.Len())
	}
}

// A leader notes each follower's broker epoch (KIP-903) in every one of
// the thousands of partitions it leads: two followers' epochs cost a
// partition a few dozen bytes, not a map's few hundred.
func TestFollowerEpochsCostALedPartitionLittleHeap(t *testing.T) {
	const n = 1000
	ps := make([]Partition, n)
	grown := testkit.HeapGrowth(func() {
		for i := range ps {
			ps[i].noteReplicaEpoch(2, 10)
			ps[i].noteReplicaEpoch(3, 11)
			ps[i].noteReplicaEpoch(2, 12)
		}
	})
	per := grown / n
	if per > 100 {
		t.Fatalf("two followers' epochs keep %d bytes a partition, want at most 100", per)
	}
	if e := ps[0].mu.replicaEpochs.get(2); e != 12 {
		t.Fatalf("follower 2's epoch %d, want the latest, 12", e)
	}
	if e := ps[0].mu.replicaEpochs.get(3); e != 11 {
		t.Fatalf("follower 3's epoch %d, want 11", e)
	}
	if e := ps[0].mu.replicaEpochs.get(4); e != -1 {
		t.Fatalf("unknown follower's epoch %d, want -1", e)
	}
	runtime.KeepAlive(ps)
}

// An idle partition's replica state (10,000 of them on a broker) keeps
// only what every partition needs: the clock, logger and producer
// settings every partition shares are one pointer, and what only a
// partition with parked produces or fetches, an ISR change or a waiter on
// its high watermark uses is made by the first of them. It was a 416-byte
// allocation.
func TestIdlePartitionStateIsSmall(t *testing.T) {
	m := &Manager{now: time.Now}
	const n = 10000
	ps := make([]*Partition, n)
	grown := testkit.HeapGrowth(func() {
		for i := range ps {
			ps[i] = m.newPartition(partition.TopicPartition{Topic: "t", Partition: int32(i)}, nil)
		}
	})
	per := grown / n
	t.Logf("heap per idle partition state: %d bytes", per)
	if per > 288 {
		t.Fatalf("an idle partition's state keeps %d bytes, want at most 288", per)
	}
	// What the busy ones need is still there when asked for.
	p := ps[0]
	p.mu.Lock()
	p.busyLocked().waiters = map[uint64]chan error{1: make(chan error, 1)}
	p.mu.Unlock()
	if p.mu.busy == nil || len(p.mu.busy.waiters) != 1 {
		t.Fatal("busy state lost")
	}
	runtime.KeepAlive(ps)
}

// The ISR state machine of a led partition keeps its followers' states in
// one small slice rather than a map of pointers: a broker leads thousands
// of idle partitions. With RF=3 it was about 490 bytes, 400 since.
func TestLeaderStateOfAnIdlePartitionIsSmall(t *testing.T) {
	const n = 2000
	sts := make([]*leaderState, n)
	li := LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}
	grown := testkit.HeapGrowth(func() {
		for i := range sts {
			sts[i], _ = newLeaderState(1, 30000, li, 10, 10, 1000)
		}
	})
	per := grown / n
	t.Logf("heap per led partition's ISR state: %d bytes", per)
	if per > 450 {
		t.Fatalf("a led partition's ISR state keeps %d bytes, want at most 450", per)
	}
	st := sts[0]
	if f := st.follower(3); f == nil || f.id != 3 || f.leo != -1 {
		t.Fatalf("follower 3: %+v", f)
	}
	if st.follower(1) != nil {
		t.Fatal("the leader has a follower state of its own")
	}
	runtime.KeepAlive(sts)
}

// A follower keeps, for each partition it fetches, the fetcher's state of
// it and the fetcher it is assigned to: thousands on a broker following
// 10,000 partitions. The assignment names the fetcher (its leader epoch
// is in the fetcher's state) instead of a copy of the fetcher's key and
// the epoch, and the state is a 48-byte allocation, not 64.
func TestFollowedPartitionsCostTheFetchersLittleHeap(t *testing.T) {
	const n = 3000
	m := &Manager{now: time.Now}
	var fs fetchers
	fs.init(m)
	f := &fetcher{m: m, leader: 2, addr: "leader:9092", wake: make(chan struct{}, 1), parts: make(map[partition.TopicPartition]*fetchState)}
	fs.byKey[f.key()] = f
	ps := make([]*Partition, n)
	for i := range ps {
		ps[i] = m.newPartition(partition.TopicPartition{Topic: "t", Partition: int32(i)}, nil)
	}
	grown := testkit.HeapGrowth(func() {
		for _, p := range ps {
			fs.assign(p, 2, 5, "leader:9092")
		}
	})
	per := grown / n
	t.Logf("fetchers' heap per followed partition: %d bytes", per)
	// 193 bytes before, 144 since.
	if per > 170 {
		t.Fatalf("the fetchers keep %d bytes a followed partition, want at most 170", per)
	}
	if fs.assigned[ps[7].TP] != f || f.epochOf(ps[7].TP) != 5 {
		t.Fatal("partition 7 not assigned to the fetcher at epoch 5")
	}
	// The same leader and epoch again: left alone.
	s := f.parts[ps[7].TP]
	fs.assign(ps[7], 2, 5, "leader:9092")
	if f.parts[ps[7].TP] != s {
		t.Fatal("an unchanged assignment restarted the partition's fetch state")
	}
	runtime.KeepAlive(&fs)
	runtime.KeepAlive(f)
	runtime.KeepAlive(ps)
}

// Partitions over the same brokers share one copy of their replica list
// and ISR: 10,000 partitions over three brokers have six distinct replica
// lists, and a copy of each list cost every partition two allocations.
func TestPartitionsShareTheirReplicaLists(t *testing.T) {
	var sets replicaSets
	const n = 10000
	kept := make([][]int32, n)
	grown := testkit.HeapGrowth(func() {
		for i := range kept {
			ids := []int32{int32(1 + i%3), int32(1 + (i+1)%3), int32(1 + (i+2)%3)}
			kept[i] = sets.get(ids)
		}
	})
	if per := grown / n; per > 1 {
		t.Fatalf("keeping a replica list costs %d bytes a partition, want nothing", per)
	}
	if &kept[0][0] != &kept[3][0] || !slices.Equal(kept[3], []int32{1, 2, 3}) {
		t.Fatalf("equal lists not shared: %v %v", kept[0], kept[3])
	}
	if got := sets.get([]int32{}); got == nil || len(got) != 0 {
		t.Fatalf("an empty list became %#v", got)
	}
	runtime.KeepAlive(kept)
}

// A follower session's watch forgets the room a burst of changes needed:
// a topic's creation marks thousands of partitions dirty at once, and a
// map cleared for reuse would keep that room while the session idles.
func TestSessionWatchKeepsNoRoomAfterABurst(t *testing.T) {
	w := (*Manager)(nil).NewSessionWatch(2)
	const n = 5000
	tps := make([]partition.TopicPartition, n)
	for i := range tps {
		tps[i] = partition.TopicPartition{Topic: "t", Partition: int32(i)}
	}
	seen := 0
	grown := testkit.HeapGrowth(func() {
		for _, tp := range tps {
			w.markDirty(tp, false)
		}
		w.TakeDirty(func(partition.TopicPartition) { seen++ })
	})
	if seen != n || w.Dirty() != 0 {
		t.Fatalf("took %d changed partitions, %d left; want %d, none", seen, w.Dirty(), n)
	}
	kept := grown
	t.Logf("heap kept after a burst of %d changes: %d bytes", n, kept)
	if kept > 16<<10 {
		t.Fatalf("the watch keeps %d bytes after a burst, want at most 16 KiB", kept)
	}
	w.markDirty(tps[1], false)
	if w.Dirty() != 1 {
		t.Fatal("a change after the burst was lost")
	}
	runtime.KeepAlive(w)
	runtime.KeepAlive(tps)
}

package partition

import (
	"fmt"
	"runtime"
	"testing"
)

// An idle partition's log costs the broker memory for as long as it is
// open, whether or not anything is ever written to it: with 10,000
// replicas a node, every hundred bytes a log keeps is a megabyte of live
// heap (and about two of RSS, the collector letting the heap grow to twice
// the live size). This pins what an empty log opened through the Manager
// (the broker's path: its struct, its segment with the two in-memory
// indexes, its open file and the Manager's entries) keeps on the heap.
func TestManager_IdleLogHeapPerPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of files")
	}
	dir := t.TempDir()
	m, err := OpenManager(OSFS(), ManagerConfig{Dirs: []string{dir}, NodeID: 1, Defaults: DefaultConfig()}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 400
	// The Manager's maps grow by doubling: fill them first so that their
	// growth is not counted against the logs.
	tps := make([]TopicPartition, n)
	for i := range tps {
		tps[i] = TopicPartition{Topic: fmt.Sprintf("idle-%04d", i), Partition: 0}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tp := range tps {
		if _, err := m.GetOrCreate(tp); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perLog := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("live heap per idle log: %d bytes", perLog)
	// About 1.8 KB while each log kept a logger of its own, names for its
	// indexes, a condition variable, its open-time state, a closure over
	// five values and a copy of its configuration; 1.0-1.15 KB since.
	if perLog > 1300 {
		t.Fatalf("an idle log keeps %d bytes of heap, want at most 1300", perLog)
	}
	runtime.KeepAlive(tps)
}

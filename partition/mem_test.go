package partition

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/rs/zerolog"
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
	grown := testkit.HeapGrowth(func() {
		for _, tp := range tps {
			if _, err := m.GetOrCreate(tp); err != nil {
				t.Fatal(err)
			}
		}
	})
	perLog := grown / n
	t.Logf("live heap per idle log: %d bytes", perLog)
	// About 1.8 KB while each log kept a logger of its own, names for its
	// indexes, a condition variable, its open-time state, a closure over
	// five values and a copy of its configuration; 1.0-1.15 KB since.
	if perLog > 1300 {
		t.Fatalf("an idle log keeps %d bytes of heap, want at most 1300", perLog)
	}
	runtime.KeepAlive(tps)
}

// The Manager keeps one map entry per partition, its log and its log dir
// together: a second map of the dirs cost every partition another 40-byte
// slot and the room a map keeps to grow, over half a megabyte at 10,000.
// Measured as what dropping the Manager's books of n logs frees.
func TestManager_HoldsOneEntryPerLog(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of files")
	}
	m, err := OpenManager(OSFS(), ManagerConfig{Dirs: []string{t.TempDir()}, NodeID: 1, Defaults: DefaultConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 700
	tps := make([]TopicPartition, n)
	logs := make([]*Log, n)
	for i := range tps {
		tps[i] = TopicPartition{Topic: "idle", Partition: int32(i)}
		if logs[i], err = m.GetOrCreate(tps[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Forget the logs from the Manager's books and see what that frees.
	grown := testkit.HeapGrowth(func() {
		m.mu.Lock()
		books := m.mu.logs
		m.mu.logs = nil
		m.mu.Unlock()
		runtime.KeepAlive(books)
		books = nil
	})
	per := (-grown) / n
	t.Logf("the Manager's bookkeeping per log: %d bytes", per)
	// About 154 bytes with two maps, 83-95 with one.
	if per > 120 {
		t.Fatalf("the Manager keeps %d bytes of bookkeeping a log, want at most 120", per)
	}
	runtime.KeepAlive(logs)
	runtime.KeepAlive(tps)
}

// The Log struct itself, one per replica: what only a truncation that is
// not durable yet needs (the segments it cut, those whose files it could
// not remove) sits behind one pointer. A 416-byte allocation before.
func TestIdleLogStructIsSmall(t *testing.T) {
	const n = 5000
	logs := make([]*Log, n)
	grown := testkit.HeapGrowth(func() {
		for i := range logs {
			logs[i] = &Log{tp: TopicPartition{Topic: "t", Partition: int32(i)}}
		}
	})
	per := grown / n
	t.Logf("heap per Log struct: %d bytes", per)
	// 352 bytes before its environment was shared (see
	// TestLogsOfADirShareOneEnvironment).
	if per > 288 {
		t.Fatalf("a Log struct takes %d bytes of heap, want at most 288", per)
	}
	l := logs[0]
	l.mu.Lock()
	seg := &segment{}
	l.noteCutLocked(seg)
	l.noteCutLocked(seg)
	if got := l.cutLocked(); len(got) != 1 || got[0] != seg {
		t.Fatalf("cut segments %v, want the one noted", got)
	}
	l.clearCutLocked()
	if l.mu.left != nil {
		t.Fatal("nothing left to do, yet the log keeps its truncation leftovers")
	}
	l.mu.Unlock()
	runtime.KeepAlive(logs)
}

// What the recovery-point checkpoint on disk holds is kept, so that a
// truncation above it rewrites nothing: a sorted slice of 32-byte
// entries (33-44 bytes a partition measured here), where a map of the
// same cost 66.
func TestManager_RecoveryPointsOnDiskKeepLittleHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of files")
	}
	dir := t.TempDir()
	m, err := OpenManager(OSFS(), ManagerConfig{Dirs: []string{dir}, NodeID: 1, Defaults: DefaultConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 1500
	for i := range n {
		l, err := m.GetOrCreate(TopicPartition{Topic: "idle", Partition: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		// A new log is lazy, and checkpoints leave lazy logs out.
		if err := l.ensureFiles(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	grown := testkit.HeapGrowth(func() {
		m.ckMu.Lock()
		onDisk := m.rpOnDisk
		m.rpOnDisk = nil
		m.ckMu.Unlock()
		defer func() {
			m.ckMu.Lock()
			m.rpOnDisk = map[string]rpCheckpoint{}
			m.ckMu.Unlock()
		}()
		if len(onDisk[dir]) != n {
			t.Fatalf("%d recovery points on disk known, want %d", len(onDisk[dir]), n)
		}
		if rp, ok := onDisk[dir].get(TopicPartition{Topic: "idle", Partition: 77}); !ok || rp != 0 {
			t.Fatalf("idle-77's recovery point on disk: %d, %v", rp, ok)
		}
		onDisk = nil
	})
	per := (-grown) / n
	t.Logf("heap per recovery point on disk: %d bytes", per)
	if per > 52 {
		t.Fatalf("each recovery point on disk keeps %d bytes, want at most 52", per)
	}
}

// A new partition's log stays lazy (no files) until its first append, and
// most of an idle broker's 10,000 replicas never get one: what such a log
// keeps of its own is what counts. Its placeholder segment's two empty
// indexes are shared by every lazy log (224 bytes a log before), its
// directory's path is made when a file operation needs it (a joined
// string a log before), and its topic id, kept in memory until the files
// exist, is the topic's one interned copy (16 bytes a log before). About
// 800 bytes a lazy log with its topic id before, 480-500 after, measured
// with the Manager's map already grown.
func TestLazyLogKeepsNoIndexesPathOrTopicIDOfItsOwn(t *testing.T) {
	m, err := OpenManager(NewMemFS(), ManagerConfig{Dirs: []string{"/data/a-log-dir-of-a-usual-length"}, NodeID: 1, Defaults: DefaultConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	logs, per := lazyLogsWithTopicID(t, m, 2000, id)
	t.Logf("live heap per lazy log with its topic id: %d bytes", per)
	for _, l := range logs {
		if !l.Lazy() {
			t.Fatal("a new log is not lazy")
		}
		if got, ok, err := l.TopicID(); err != nil || !ok || got != id {
			t.Fatalf("topic id %x %v %v, want %x", got, ok, err, id)
		}
	}
	if per > 600 {
		t.Fatalf("a lazy log keeps %d bytes of heap, want at most 600", per)
	}
	runtime.KeepAlive(logs)
}

// What every log of a log dir has in common (its FS, the dir's path, the
// clock, the owner's logger, the dir's syncer, the checkpoints to rewrite
// after a truncation) is one environment per dir that the logs point to,
// not six fields and a closure per log: the Log struct went from a
// 352-byte allocation to 288, and the truncation hook's closure (24 bytes
// a log) is a Manager method. A lazy log with its topic id: about 530
// bytes before, 440 after.
func TestLogsOfADirShareOneEnvironment(t *testing.T) {
	// The struct's own size is TestIdleLogStructIsSmall's.
	const n = 2000
	m, err := OpenManager(NewMemFS(), ManagerConfig{Dirs: []string{"/data/a", "/data/b"}, NodeID: 1, Defaults: DefaultConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	logs, per := lazyLogsWithTopicID(t, m, n, [16]byte{1})
	t.Logf("live heap per lazy log with its topic id: %d bytes", per)
	envs := map[*logEnv]string{}
	for _, l := range logs {
		envs[l.env] = l.LogDir()
		if l.env.owner != m || l.env.sync == nil {
			t.Fatalf("log %s is not hooked to its Manager's dir", l.tp)
		}
	}
	if len(envs) != 2 {
		t.Fatalf("%d environments for logs in 2 dirs: %v", len(envs), envs)
	}
	if per > 500 {
		t.Fatalf("a lazy log keeps %d bytes of heap, want at most 500", per)
	}
	runtime.KeepAlive(logs)
}

// The cleaner looks at every log each log.cleaner.backoff.ms (15 s) while
// nothing needs cleaning: with 10,000 idle replicas its list of the logs
// was 480 KB of garbage a scan (a logInDir of 48 bytes a log), most of an
// idle broker's allocation, which regrows the heap an idle broker has
// returned. It lists the logs alone: 8 bytes a log.
func TestCleanerScanOfIdleLogsAllocatesLittle(t *testing.T) {
	m, err := OpenManager(NewMemFS(), ManagerConfig{Dirs: []string{"/data"}, NodeID: 1, Defaults: DefaultConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 5000
	for i := range n {
		if _, err := m.GetOrCreate(TopicPartition{Topic: "idle", Partition: int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	m.grabFilthiest(now) // the cleaner's maps settle
	var before, after runtime.MemStats
	const scans = 5
	runtime.ReadMemStats(&before)
	for range scans {
		if _, _, ok := m.grabFilthiest(now); ok {
			t.Fatal("an idle, uncompacted log was picked for cleaning")
		}
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / scans / n
	t.Logf("allocated per log and scan: %.1f bytes", per)
	if per > 16 {
		t.Fatalf("a cleaner scan allocates %.1f bytes a log, want at most 16", per)
	}
}

// lazyLogsWithTopicID creates n lazy logs of "an-idle-topic" in m, each
// given topic id id, and returns them with the heap each kept. The
// Manager's map is grown first (the same partitions created and deleted)
// so that its growth is not counted.
func lazyLogsWithTopicID(t *testing.T, m *Manager, n int, id [16]byte) ([]*Log, int64) {
	t.Helper()
	tps := make([]TopicPartition, n)
	for i := range tps {
		tps[i] = TopicPartition{Topic: "an-idle-topic", Partition: int32(i)}
	}
	for _, tp := range tps {
		if _, err := m.GetOrCreate(tp); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range tps {
		if err := m.Delete(tp); err != nil {
			t.Fatal(err)
		}
	}
	logs := make([]*Log, n)
	grown := testkit.HeapGrowth(func() {
		for i, tp := range tps {
			l, err := m.GetOrCreate(tp)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetTopicID(id); err != nil {
				t.Fatal(err)
			}
			logs[i] = l
		}
	})
	return logs, grown / int64(n)
}

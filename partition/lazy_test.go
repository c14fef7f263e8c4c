package partition

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
)

func lazyTestManager(t *testing.T, fs FS) *Manager {
	t.Helper()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// filesUnder lists every name below dir (recursively), for the messages.
func filesUnder(fs *MemFS, dir string) []string {
	var out []string
	names, _ := fs.ReadDir(dir)
	for _, n := range names {
		p := filepath.Join(dir, n)
		out = append(out, p)
		if _, isDir, _ := fs.Stat(p); isDir {
			out = append(out, filesUnder(fs, p)...)
		}
	}
	return out
}

// A partition new to the broker costs no files until its first append:
// everything that reads or maintains a log works on it in memory.
func TestNewPartitionCreatesNoFilesUntilFirstAppend(t *testing.T) {
	mem := NewMemFS()
	m := lazyTestManager(t, mem)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.GetOrCreate(tp)
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte{1, 2, 3}
	if err := l.SetTopicID(id); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := l.TopicID(); err != nil || !ok || got != id {
		t.Fatalf("TopicID = %v %v %v, want the id set", got, ok, err)
	}
	// The readers and the maintenance an empty partition sees.
	if ri, err := l.Read(0, 1<<20, 0, true); err != nil || ri.Size() != 0 || ri.LogEndOffset != 0 {
		t.Fatalf("Read: %+v %v", ri, err)
	}
	if off, _, _, ok, err := l.OffsetForTimestamp(-1); err != nil || !ok || off != 0 {
		t.Fatalf("latest offset %d %v %v", off, ok, err)
	}
	if _, _, _, ok, err := l.OffsetForTimestamp(-3); err != nil || ok {
		t.Fatalf("max timestamp: %v %v", ok, err)
	}
	if _, _, _, ok, err := l.OffsetForTimestamp(5); err != nil || ok {
		t.Fatalf("by timestamp: %v %v", ok, err)
	}
	if ep, end := l.EndOffsetForEpoch(3); ep != -1 || end != -1 {
		t.Fatalf("EndOffsetForEpoch = %d %d", ep, end)
	}
	if l.Size() != 0 || l.LogDir() != "/d1" {
		t.Fatalf("size %d in %s", l.Size(), l.LogDir())
	}
	if _, _, ok, err := l.LatestProducerSnapshot(); err != nil || ok {
		t.Fatalf("LatestProducerSnapshot: %v %v", ok, err)
	}
	if err := l.WriteProducerSnapshot(0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFullyAndStartAt(0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(-1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(time.Now().Add(365 * 24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	m.RunRetention()
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	if ds := m.DescribeLogDirs(); len(ds) != 1 || len(ds[0].Partitions) != 1 || ds[0].Partitions[0].Size != 0 {
		t.Fatalf("DescribeLogDirs = %+v", ds)
	}
	if ok, _, _ := mem.Stat("/d1/t-0"); ok {
		t.Fatalf("files of a partition with no append: %v", filesUnder(mem, "/d1"))
	}
	if cp := string(readFileBytes(t, mem, "/d1/recovery-point-offset-checkpoint")); strings.Contains(cp, "t 0") {
		t.Fatalf("checkpoint names a partition with no files: %q", cp)
	}

	info := mustAppend(t, l, testkit.SimpleBatch(2, 1, 10), 4)
	if info.FirstOffset != 0 || info.LastOffset != 1 {
		t.Fatalf("first append at %d-%d", info.FirstOffset, info.LastOffset)
	}
	// (The index files come with their first entries.)
	for _, f := range []string{"00000000000000000000.log", partitionMetadataFile} {
		if ok, _, _ := mem.Stat(filepath.Join("/d1/t-0", f)); !ok {
			t.Fatalf("no %s after the first append: %v", f, filesUnder(mem, "/d1"))
		}
	}
	if got, ok, err := l.TopicID(); err != nil || !ok || got != id {
		t.Fatalf("TopicID after the files exist = %v %v %v", got, ok, err)
	}
	if hs := readAll(t, l, 0, 2); len(hs) != 1 || hs[0].PartitionLeaderEpoch != 4 {
		t.Fatalf("read back %+v", hs)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The epoch checkpoint is written with the first epoch already.
	if ck := string(readFileBytes(t, mem, "/d1/t-0/"+leaderEpochCheckpointFile)); ck != "0\n1\n4 0\n" {
		t.Fatalf("leader-epoch-checkpoint %q", ck)
	}
}

// The first append to a lazy log creates its files; once flushed, the
// batches survive a crash (the new directory's own entry is synced by the
// flush, not only its files), and the log reopens with them and its topic
// id.
func TestLazyLogFirstAppendSurvivesCrashAfterFlush(t *testing.T) {
	mem := NewMemFS()
	m := lazyTestManager(t, mem)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.GetOrCreate(tp)
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte{9}
	if err := l.SetTopicID(id); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testkit.SimpleBatch(3, 1, 10), 2)

	// Appended, not flushed: a crash may lose the whole directory, which
	// leaves the partition new and empty.
	unflushed := mem.CrashClone()

	// (No root checkpoint write here: it would sync the log dir too.)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()

	m2 := lazyTestManager(t, crashed)
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2 == nil {
		t.Fatalf("flushed log lost in a crash: %v", filesUnder(crashed, "/"))
	}
	if l2.Lazy() || l2.LogEndOffset() != 3 {
		t.Fatalf("reopened: lazy %v, LEO %d, want 3", l2.Lazy(), l2.LogEndOffset())
	}
	if got, ok, err := l2.TopicID(); err != nil || !ok || got != id {
		t.Fatalf("topic id after crash: %v %v %v", got, ok, err)
	}
	if eps := l2.EpochEntries(); len(eps) != 1 || eps[0] != [2]int64{2, 0} {
		t.Fatalf("epochs after crash: %v", eps)
	}

	m3 := lazyTestManager(t, unflushed)
	defer m3.Close()
	if l3, err := m3.GetOrCreate(tp); err != nil {
		t.Fatal(err)
	} else if l3.LogEndOffset() != 0 && l3.LogEndOffset() != 3 {
		t.Fatalf("unflushed log reopened at LEO %d", l3.LogEndOffset())
	}
	_ = m.Close()
}

// A broker restarted (cleanly or not) with a partition whose log was never
// created takes it up as a new empty log, exactly as at creation: no
// directory appears, nothing stale is left in the checkpoints, and its
// first append works.
func TestRestartWithAssignedPartitionWhoseDirWasNeverMade(t *testing.T) {
	for _, clean := range []bool{true, false} {
		mem := NewMemFS()
		m := lazyTestManager(t, mem)
		tp := TopicPartition{Topic: "t", Partition: 0}
		if _, err := m.GetOrCreate(tp); err != nil {
			t.Fatal(err)
		}
		fs := mem
		if clean {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := m.WriteCheckpoints(); err != nil {
				t.Fatal(err)
			}
			fs = mem.CrashClone()
			_ = m.Close()
		}
		m2 := lazyTestManager(t, fs)
		if m2.Get(tp) != nil {
			t.Fatal("a partition with no directory was loaded at start")
		}
		l, err := m2.GetOrCreate(tp)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Lazy() || l.LogEndOffset() != 0 {
			t.Fatalf("taken up lazy=%v at %d", l.Lazy(), l.LogEndOffset())
		}
		if ok, _, _ := fs.Stat("/d1/t-0"); ok {
			t.Fatal("taking the partition up created its directory")
		}
		mustAppend(t, l, testkit.SimpleBatch(1, 1, 10), 0)
		if err := m2.Close(); err != nil {
			t.Fatal(err)
		}
		m3 := lazyTestManager(t, fs)
		if l := m3.Get(tp); l == nil || l.LogEndOffset() != 1 {
			t.Fatalf("clean=%v: log after its first append and a restart: %v", clean, l)
		}
		_ = m3.Close()
	}
}

// A lazy log that is deleted has nothing on disk to remove, and a
// truncation to a log start past 0 (a follower behind a leader whose
// log start moved) creates the files so that the log start survives a
// restart.
func TestLazyLogDeleteAndTruncateFully(t *testing.T) {
	mem := NewMemFS()
	m := lazyTestManager(t, mem)
	a := TopicPartition{Topic: "a", Partition: 0}
	if _, err := m.GetOrCreate(a); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(a); err != nil {
		t.Fatal(err)
	}
	if m.Get(a) != nil {
		t.Fatal("deleted log still registered")
	}
	if names, _ := mem.ReadDir("/d1"); len(names) != 1 || names[0] != metaPropertiesFile {
		t.Fatalf("deleting a lazy log left or wrote %v", names)
	}

	b := TopicPartition{Topic: "b", Partition: 0}
	l, err := m.GetOrCreate(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.Lazy() || l.LogStartOffset() != 100 || l.LogEndOffset() != 100 {
		t.Fatalf("after truncation to 100: lazy %v, [%d, %d]", l.Lazy(), l.LogStartOffset(), l.LogEndOffset())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := lazyTestManager(t, mem)
	defer m2.Close()
	if l := m2.Get(b); l == nil || l.LogStartOffset() != 100 {
		t.Fatalf("log start after restart: %v", l)
	}
}

// Creating a lazy log's files at its first append fails as any storage
// failure does: the append gets ErrStorage (KAFKA_STORAGE_ERROR) and the
// log dir goes offline, with its partitions.
func TestLazyLogCreationFailureAtFirstAppendTakesLogDirOffline(t *testing.T) {
	for _, op := range []string{"mkdir", "open"} {
		t.Run(op, func(t *testing.T) {
			faults, efs := newFailingDirs(NewMemFS())
			m, a, b := twoDirManager(t, efs)
			defer m.Close()
			w := watchFailures(m)
			if !a.Lazy() || !b.Lazy() {
				t.Fatal("new logs were not lazy")
			}
			faults.set("/d1", op, syscall.EIO)
			_, err := a.Append(testkit.SimpleBatch(1, 1, 10), 0)
			if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("first append when its files cannot be made: %v, want a storage error wrapping EIO", err)
			}
			if d := w.await(t); d != "/d1" {
				t.Fatalf("failed dir reported as %s", d)
			}
			if _, err := m.GetOrCreate(TopicPartition{"a", 0}); !errors.Is(err, ErrStorage) {
				t.Fatalf("GetOrCreate of a partition in the offline dir: %v, want ErrStorage", err)
			}
			// The other dir's lazy log is untouched.
			mustAppend(t, b, testkit.SimpleBatch(1, 1, 10), 0)
		})
	}
}

// The first flush of many new logs at once (a shutdown closes every log
// side by side) shares the syncs of their log dir rather than syncing it
// once per log.
func TestFirstFlushesOfNewLogsShareTheLogDirSync(t *testing.T) {
	const n = 200
	var (
		mu         sync.Mutex
		metaSyncs  int
		dirSyncs   int
		allArrived = make(chan struct{})
		holdFirst  sync.Once
		armed      atomic.Bool
	)
	efs := &ErrorFS{FS: NewMemFS(), Inject: func(op, name string) error {
		switch {
		case op == "sync" && strings.HasSuffix(name, partitionMetadataFile):
			mu.Lock()
			metaSyncs++
			if metaSyncs == closeParallelism {
				close(allArrived)
			}
			mu.Unlock()
		case op == "syncdir" && name == "/d1" && armed.Load():
			mu.Lock()
			dirSyncs++
			mu.Unlock()
			// The first sync of the log dir waits until as many logs as
			// close at once are on their way to it.
			holdFirst.Do(func() { <-allArrived })
		}
		return nil
	}}
	m := lazyTestManager(t, efs)
	for i := range n {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SetTopicID([16]byte{1}); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testkit.SimpleBatch(1, 1, 10), 0)
	}
	armed.Store(true)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dirSyncs > n/4 {
		t.Fatalf("closing %d new logs synced their log dir %d times", n, dirSyncs)
	}
}

package partition

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
)

// failingDirs is an ErrorFS whose faults and operation counts are per log
// dir.
type failingDirs struct {
	mu     sync.Mutex
	fail   map[string]map[string]error // dir -> op -> error
	counts map[string]map[string]int   // dir -> op -> calls reaching the FS
}

func newFailingDirs(mem *MemFS) (*failingDirs, *ErrorFS) {
	f := &failingDirs{fail: map[string]map[string]error{}, counts: map[string]map[string]int{}}
	return f, &ErrorFS{FS: mem, Inject: func(op, name string) error {
		dir := "/" + strings.Split(strings.TrimPrefix(filepath.Clean(name), "/"), "/")[0]
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.counts[dir] == nil {
			f.counts[dir] = map[string]int{}
		}
		f.counts[dir][op]++
		return f.fail[dir][op]
	}}
}

func (f *failingDirs) set(dir, op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[dir] == nil {
		f.fail[dir] = map[string]error{}
	}
	f.fail[dir][op] = err
}

func (f *failingDirs) count(dir, op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[dir][op]
}

type dirFailures struct {
	mu   sync.Mutex
	dirs []string
	ch   chan string
}

func watchFailures(m *Manager) *dirFailures {
	w := &dirFailures{ch: make(chan string, 8)}
	m.OnLogDirFailure(func(dir string, err error) {
		w.mu.Lock()
		w.dirs = append(w.dirs, dir)
		w.mu.Unlock()
		w.ch <- dir
	})
	return w
}

func (w *dirFailures) await(t *testing.T) string {
	t.Helper()
	select {
	case d := <-w.ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no log dir failure reported")
		return ""
	}
}

// twoDirManager opens a manager over /d1 and /d2 with one partition in each.
func twoDirManager(t *testing.T, fs FS) (*Manager, *Log, *Log) {
	t.Helper()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.GetOrCreate(TopicPartition{"a", 0})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.GetOrCreate(TopicPartition{"b", 0})
	if err != nil {
		t.Fatal(err)
	}
	if a.parentDir() != "/d1" || b.parentDir() != "/d2" {
		t.Fatalf("partitions in %s and %s, want /d1 and /d2", a.parentDir(), b.parentDir())
	}
	return m, a, b
}

func TestFailedFsyncTakesLogDirOfflineAndIsNeverRetried(t *testing.T) {
	faults, efs := newFailingDirs(NewMemFS())
	m, a, b := twoDirManager(t, efs)
	w := watchFailures(m)
	mustAppend(t, a, testkit.SimpleBatch(2, 1, 10), 0)
	mustAppend(t, b, testkit.SimpleBatch(2, 1, 10), 0)

	faults.set("/d1", "sync", syscall.EIO)
	err := a.Flush()
	if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush after failed fsync: %v, want a storage error wrapping EIO", err)
	}
	if d := w.await(t); d != "/d1" {
		t.Fatalf("failed dir reported as %s", d)
	}
	syncs, writes := faults.count("/d1", "sync"), faults.count("/d1", "write")

	// The disk may be healthy again; the dir stays offline and nothing
	// reaches it: no second fsync of pages that may be lost.
	faults.set("/d1", "sync", nil)
	if err := a.Flush(); !errors.Is(err, ErrStorage) && !errors.Is(err, ErrLogClosed) {
		t.Fatalf("second flush: %v", err)
	}
	if _, err := a.Append(testkit.SimpleBatch(1, 1, 10), 0); err == nil {
		t.Fatal("append to a log in an offline dir succeeded")
	}
	if _, err := m.GetOrCreate(TopicPartition{"a", 0}); !errors.Is(err, ErrStorage) {
		t.Fatalf("GetOrCreate of a partition in the offline dir: %v, want ErrStorage", err)
	}
	if n := faults.count("/d1", "sync"); n != syncs {
		t.Fatalf("%d more fsyncs reached the failed dir", n-syncs)
	}
	if n := faults.count("/d1", "write"); n != writes {
		t.Fatalf("%d more writes reached the failed dir", n-writes)
	}

	// The other dir serves as before, and new partitions go there.
	mustAppend(t, b, testkit.SimpleBatch(2, 1, 10), 0)
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := m.GetOrCreate(TopicPartition{"c", 0})
	if err != nil || c.parentDir() != "/d2" {
		t.Fatalf("new partition: %v in %v, want /d2", err, c)
	}
	dirs := m.LogDirs()
	if !dirs[0].Offline || dirs[1].Offline || dirs[0].Err == nil {
		t.Fatalf("log dirs: %+v", dirs)
	}
	if ids := m.OfflineLogDirIDs(); len(ids) != 1 || ids[0] != dirs[0].ID {
		t.Fatalf("offline ids %v, want [%v]", ids, dirs[0].ID)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close with one dir offline: %v", err)
	}
	if faults.count("/d1", "sync") != syncs {
		t.Fatal("close synced the offline dir")
	}
	mem := efs.FS.(*MemFS)
	if ok, _, _ := mem.Stat("/d2/" + cleanShutdownFile); !ok {
		t.Fatal("healthy dir has no clean-shutdown marker")
	}
	if ok, _, _ := mem.Stat("/d1/" + cleanShutdownFile); ok {
		t.Fatal("offline dir got a clean-shutdown marker")
	}
}

func TestDiskFullOnAppendIsStorageErrorAndRestartServesAcknowledged(t *testing.T) {
	mem := NewMemFS()
	faults, efs := newFailingDirs(mem)
	m, a, b := twoDirManager(t, efs)
	w := watchFailures(m)
	var acked []AppendInfo
	for i := 0; i < 5; i++ {
		acked = append(acked, mustAppend(t, a, testkit.SimpleBatch(3, 1, 10), 0))
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}

	faults.set("/d1", "write", syscall.ENOSPC)
	_, err := a.Append(testkit.SimpleBatch(3, 1, 10), 0)
	if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want a storage error wrapping ENOSPC", err)
	}
	w.await(t)
	writes := faults.count("/d1", "write")
	if _, err := a.Append(testkit.SimpleBatch(3, 1, 10), 0); err == nil {
		t.Fatal("append after the dir went offline succeeded")
	}
	if faults.count("/d1", "write") != writes {
		t.Fatal("append after the dir went offline reached the disk")
	}
	mustAppend(t, b, testkit.SimpleBatch(3, 1, 10), 0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Space comes back; a restart recovers the dir and serves what was
	// acknowledged.
	m2, err := OpenManager(mem, ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	a2 := m2.Get(TopicPartition{"a", 0})
	last := acked[len(acked)-1].LastOffset
	if a2 == nil || a2.LogEndOffset() != last+1 {
		t.Fatalf("after restart: log %v, want LEO %d", a2, last+1)
	}
	ri, err := a2.Read(0, 1<<20, last+1, true)
	if err != nil || ri.NextOffset != last+1 {
		t.Fatalf("read after restart: %v, next %d", err, ri.NextOffset)
	}
	if m2.LogDirs()[0].Offline {
		t.Fatal("dir still offline after restart")
	}
}

func TestReadErrorTakesLogDirOffline(t *testing.T) {
	faults, efs := newFailingDirs(NewMemFS())
	m, a, b := twoDirManager(t, efs)
	defer m.Close()
	w := watchFailures(m)
	mustAppend(t, a, testkit.SimpleBatch(2, 1, 10), 0)
	mustAppend(t, b, testkit.SimpleBatch(2, 1, 10), 0)
	faults.set("/d2", "read", syscall.EIO)
	if _, err := b.Read(0, 1<<20, 2, true); !errors.Is(err, ErrStorage) {
		t.Fatalf("read: %v, want ErrStorage", err)
	}
	if d := w.await(t); d != "/d2" {
		t.Fatalf("reported %s", d)
	}
	if _, err := a.Read(0, 1<<20, 2, true); err != nil {
		t.Fatalf("read from the healthy dir: %v", err)
	}
}

func TestFailedRenameTakesLogDirOffline(t *testing.T) {
	faults, efs := newFailingDirs(NewMemFS())
	m, _, b := twoDirManager(t, efs)
	w := watchFailures(m)
	mustAppend(t, b, testkit.SimpleBatch(2, 1, 10), 0)
	faults.set("/d1", "rename", syscall.EIO)
	if err := m.WriteCheckpoints(); !errors.Is(err, ErrStorage) {
		t.Fatalf("checkpoints: %v, want ErrStorage", err)
	}
	if d := w.await(t); d != "/d1" {
		t.Fatalf("reported %s", d)
	}
	renames := faults.count("/d1", "rename")
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatalf("checkpoints with the failed dir offline: %v", err)
	}
	if faults.count("/d1", "rename") != renames {
		t.Fatal("checkpoint written to the offline dir")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLogDirHasDirectoryIDInMetaProperties(t *testing.T) {
	fs := NewMemFS()
	cfg := ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(fs, cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	first := m.LogDirs()
	m.Close()
	if first[0].ID == first[1].ID || first[0].ID == [16]byte{} {
		t.Fatalf("directory ids %v", first)
	}
	data, _, _ := readWholeFile(fs, "/d1/"+metaPropertiesFile)
	if got := parseProperties(data)["directory.id"]; got != UUIDString(first[0].ID) {
		t.Fatalf("meta.properties directory.id %q, want %q", got, UUIDString(first[0].ID))
	}
	m, err = OpenManager(fs, cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if again := m.LogDirs(); again[0].ID != first[0].ID || again[1].ID != first[1].ID {
		t.Fatalf("ids changed across restart: %v then %v", first, again)
	}
}

func TestFailingFSHookFailsOnlyItsDirOnceTriggered(t *testing.T) {
	trigger := filepath.Join(t.TempDir(), "fail")
	fs := FailingFS(NewMemFS(), "/d1", trigger)
	m, a, b := twoDirManager(t, fs)
	defer m.Close()
	var failed atomic.Value
	done := make(chan struct{})
	m.OnLogDirFailure(func(dir string, err error) { failed.Store(dir); close(done) })
	mustAppend(t, a, testkit.SimpleBatch(1, 1, 10), 0)
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(testkit.SimpleBatch(1, 1, 10), 0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append once triggered: %v", err)
	}
	<-done
	if failed.Load() != "/d1" {
		t.Fatalf("failed %v", failed.Load())
	}
	mustAppend(t, b, testkit.SimpleBatch(1, 1, 10), 0)
}

func TestLogDirFailingWhileOpeningStopsTheStart(t *testing.T) {
	mem := NewMemFS()
	m, a, b := twoDirManager(t, mem)
	mustAppend(t, a, testkit.SimpleBatch(2, 1, 10), 0)
	mustAppend(t, b, testkit.SimpleBatch(2, 1, 10), 0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	faults, efs := newFailingDirs(mem)
	faults.set("/d2", "read", syscall.EIO)
	_, err := OpenManager(efs, ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, testLogger(t))
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("open with a failing dir: %v, want ErrStorage", err)
	}
}

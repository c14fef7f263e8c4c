package partition

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/internal/testkit"
)

// countingFS counts the calls that reach the file system (each one at
// least one system call on OSFS), by operation.
type countingFS struct {
	FS
	mu sync.Mutex
	n  map[string]int
}

func newCountingFS(fs FS) *countingFS { return &countingFS{FS: fs, n: map[string]int{}} }

func (c *countingFS) add(op string) {
	c.mu.Lock()
	c.n[op]++
	c.mu.Unlock()
}

func (c *countingFS) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func (c *countingFS) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, v := range c.n {
		t += v
	}
	return t
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	op := "open"
	if flag&os.O_CREATE != 0 {
		op = "create"
	}
	c.add(op)
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}
func (c *countingFS) Remove(name string) error { c.add("remove"); return c.FS.Remove(name) }
func (c *countingFS) Rename(o, n string) error { c.add("rename"); return c.FS.Rename(o, n) }
func (c *countingFS) MkdirAll(p string, m os.FileMode) error {
	c.add("mkdir")
	return c.FS.MkdirAll(p, m)
}
func (c *countingFS) ReadDir(d string) ([]string, error) { c.add("readdir"); return c.FS.ReadDir(d) }
func (c *countingFS) Stat(name string) (bool, bool, error) {
	c.add("stat")
	return c.FS.Stat(name)
}
func (c *countingFS) SyncDir(d string) error { c.add("syncdir"); return c.FS.SyncDir(d) }

type countingFile struct {
	File
	c *countingFS
}

func (f *countingFile) Write(p []byte) (int, error) { f.c.add("write"); return f.File.Write(p) }
func (f *countingFile) Close() error                { f.c.add("close"); return f.File.Close() }
func (f *countingFile) Sync() error                 { f.c.add("sync"); return f.File.Sync() }
func (f *countingFile) Size() (int64, error)        { f.c.add("size"); return f.File.Size() }
func (f *countingFile) Truncate(n int64) error      { f.c.add("truncate"); return f.File.Truncate(n) }
func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.add("read")
	return f.File.ReadAt(p, off)
}

// BenchmarkLazyLogFirstAppend: the first append to each of b.N new (lazy)
// logs over the real file system, the work a first produce to many new
// partitions does; fsops/op counts the calls that reach the file system.
func BenchmarkLazyLogFirstAppend(b *testing.B) {
	dir := b.TempDir()
	fs := newCountingFS(OSFS())
	batch := testkit.SimpleBatch(1, 1_700_000_000_000, 100)
	logs := make([]*Log, b.N)
	for i := range logs {
		l, err := Open(fs, dir, TopicPartition{Topic: "t", Partition: int32(i)}, DefaultConfig(), testLogger(b), OpenOptions{Lazy: true, CleanShutdown: true})
		if err != nil {
			b.Fatal(err)
		}
		_ = l.SetTopicID([16]byte{1})
		logs[i] = l
	}
	if _, err := ValidateBatches(batch, math32); err != nil {
		b.Fatal(err)
	}
	fs.reset()
	b.ResetTimer()
	for _, l := range logs {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(fs.total())/float64(b.N), "fsops/op")
	for _, l := range logs {
		l.Close()
	}
}

// The first append to a lazy log creates its directory, its .log and
// partition.metadata and nothing else: no look for stale files in the
// directory it has just made, no index file before the index has an
// entry, no size asked of a file it has just created.
func TestFirstAppendToLazyLogCreatesOnlyLogAndMetadata(t *testing.T) {
	fs := newCountingFS(NewMemFS())
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := Open(fs, "/data", TopicPartition{Topic: "t", Partition: 0}, DefaultConfig(), testLogger(t), OpenOptions{Lazy: true, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetTopicID([16]byte{7}); err != nil {
		t.Fatal(err)
	}
	fs.reset()
	mustAppend(t, l, testkit.SimpleBatch(2, 1_700_000_000_000, 10), 0)
	got := fs.reset()
	want := map[string]int{"mkdir": 1, "create": 2, "write": 2, "close": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("file system calls of the first append: %v, want %v", got, want)
	}
	names, err := fs.ReadDir("/data/t-0")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != fmt.Sprint([]string{"00000000000000000000.log", partitionMetadataFile}) {
		t.Fatalf("files after the first append: %v", names)
	}
}

// A log that got its first append and was closed cleanly reopens without
// recovering its segment, although the segment has no offset index file
// (it never had an entry), and serves what it had.
func TestCleanRestartAfterFirstAppendLoadsWithoutRecovery(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), smallConfig()} {
		mem := NewMemFS()
		if err := mem.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		tp := TopicPartition{Topic: "t", Partition: 0}
		l, err := Open(mem, "/data", tp, cfg, testLogger(t), OpenOptions{Lazy: true, CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testkit.SimpleBatch(3, 1_700_000_000_000, 10), 2)
		maxOff, _, _, _, err := l.OffsetForTimestamp(-3)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Nothing needed an index file: closing made none either.
		if names, _ := mem.ReadDir("/data/t-0"); strings.Contains(strings.Join(names, " "), "index") {
			t.Fatalf("interval %d: files after a clean close: %v", cfg.IndexIntervalBytes, names)
		}

		var logs bytes.Buffer
		l2, err := Open(mem, "/data", tp, cfg, zerolog.New(&logs), OpenOptions{CleanShutdown: true, RecoveryPoint: 3})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "recovering") {
			t.Fatalf("interval %d: clean restart recovered the segment: %s", cfg.IndexIntervalBytes, logs.String())
		}
		if l2.LogEndOffset() != 3 {
			t.Fatalf("interval %d: reopened at %d, want 3", cfg.IndexIntervalBytes, l2.LogEndOffset())
		}
		if hs := readAll(t, l2, 0, 3); len(hs) != 1 || hs[0].LastOffset() != 2 {
			t.Fatalf("interval %d: read back %+v", cfg.IndexIntervalBytes, hs)
		}
		if off, _, _, ok, err := l2.OffsetForTimestamp(-3); err != nil || !ok || off != maxOff {
			t.Fatalf("interval %d: max timestamp offset %d %v %v, want %d", cfg.IndexIntervalBytes, off, ok, err, maxOff)
		}
		// A second batch gives an index entry (interval 1): written at close,
		// it is there at the next start, which again recovers nothing.
		mustAppend(t, l2, testkit.SimpleBatch(2, 1_700_000_000_100, 10), 2)
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		l3, err := Open(mem, "/data", tp, cfg, zerolog.New(&logs), OpenOptions{CleanShutdown: true, RecoveryPoint: 5})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "recovering") || l3.LogEndOffset() != 5 {
			t.Fatalf("interval %d: second restart at %d: %s", cfg.IndexIntervalBytes, l3.LogEndOffset(), logs.String())
		}
		_ = l3.Close()
	}
}

// An offset index file lost from a segment long enough to have had
// entries is not taken for an empty one: the segment is recovered.
func TestMissingOffsetIndexOfIndexedSegmentIsRecovered(t *testing.T) {
	mem := NewMemFS()
	l := openTestLog(t, mem, smallConfig(), OpenOptions{CleanShutdown: true})
	for i := 0; i < 4; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, 1_700_000_000_000+int64(i), 10), 1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove("/data/t-0/00000000000000000000.index"); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	l2, err := Open(mem, "/data", TopicPartition{Topic: "t", Partition: 0}, smallConfig(), zerolog.New(&logs), OpenOptions{CleanShutdown: true, RecoveryPoint: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if !strings.Contains(logs.String(), "index file missing") || l2.LogEndOffset() != 8 {
		t.Fatalf("reopened at %d: %s", l2.LogEndOffset(), logs.String())
	}
}

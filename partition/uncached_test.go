package partition

import (
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// segWritesFS counts the writes to segment (.log) files, plain and
// uncached; refuse makes every uncached write fail as a kernel without
// RWF_DONTCACHE does.
type segWritesFS struct {
	FS
	refuse          bool
	plain, uncached atomic.Int64
	tried           atomic.Int64
}

type segWritesFile struct {
	File
	fs  *segWritesFS
	seg bool
}

func (c *segWritesFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return segWritesFile{f, c, strings.HasSuffix(name, ".log")}, nil
}

func (f segWritesFile) Write(p []byte) (int, error) {
	if f.seg {
		f.fs.plain.Add(1)
	}
	return f.File.Write(p)
}

func (f segWritesFile) WriteUncached(p []byte) (int, bool, error) {
	f.fs.tried.Add(1)
	if f.fs.refuse {
		return 0, false, nil
	}
	if f.seg {
		f.fs.uncached.Add(1)
	}
	n, err := f.File.Write(p)
	return n, true, err
}

// replicate copies every batch of leader into follower with append.
func replicate(t *testing.T, leader *Log, append func([]byte) (AppendInfo, error)) {
	t.Helper()
	for off := int64(0); off < leader.LogEndOffset(); {
		ri, err := leader.Read(off, 1<<10, leader.LogEndOffset(), true)
		if err != nil || len(ri.Records) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		if _, err := append(ri.Records); err != nil {
			t.Fatalf("append at %d: %v", off, err)
		}
		off = ri.NextOffset
	}
}

// A follower's log through the Manager writes what it replicates with
// uncached writes, and a leader's appends go through the page cache as
// before; the follower's log holds exactly the leader's records.
func TestFollowerAppendsAreUncachedLeaderAppendsAreNot(t *testing.T) {
	c := newClock()
	leader := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{Now: c.Now})
	fillLog(t, leader, 50, 50, c.Now().UnixMilli())

	fs := &segWritesFS{FS: NewMemFS()}
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return smallConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	follower, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower.AppendAsFollowerUncached)
	if fs.uncached.Load() == 0 || fs.plain.Load() != 0 {
		t.Fatalf("follower wrote its segments with %d uncached and %d plain writes, want only uncached", fs.uncached.Load(), fs.plain.Load())
	}
	if got, want := readRecords(t, follower), readRecords(t, leader); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower holds %d records unlike the leader's %d", len(got), len(want))
	}

	led, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 1})
	if err != nil {
		t.Fatal(err)
	}
	before := fs.uncached.Load()
	fillLog(t, led, 5, 5, c.Now().UnixMilli())
	if fs.uncached.Load() != before || fs.plain.Load() == 0 {
		t.Fatal("a leader's appends were written uncached")
	}
}

// A file system that refuses uncached writes gets the same bytes written
// plainly, and is not asked again.
func TestRefusedUncachedWritesFallBackToPlainWrites(t *testing.T) {
	c := newClock()
	leader := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{Now: c.Now})
	fillLog(t, leader, 20, 20, c.Now().UnixMilli())

	fs := &segWritesFS{FS: NewMemFS(), refuse: true}
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return smallConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	follower, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower.AppendAsFollowerUncached)
	if tried := fs.tried.Load(); tried != 1 {
		t.Fatalf("uncached writes tried %d times, want once", tried)
	}
	if got, want := readRecords(t, follower), readRecords(t, leader); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower holds %d records unlike the leader's %d", len(got), len(want))
	}
}

// On the operating system's file system the uncached writes (or the plain
// ones a kernel without RWF_DONTCACHE falls back to) keep every byte: the
// log reopened after a clean close holds the leader's records.
func TestUncachedFollowerLogSurvivesReopenOnOSFS(t *testing.T) {
	c := newClock()
	leader := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{Now: c.Now})
	fillLog(t, leader, 200, 200, c.Now().UnixMilli())
	want := readRecords(t, leader)

	dir := t.TempDir()
	open := func() *Manager {
		m, err := OpenManager(OSFS(), ManagerConfig{Dirs: []string{dir}, NodeID: 1, Now: c.Now}, func(string) Config { return smallConfig() }, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	follower, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower.AppendAsFollowerUncached)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = open()
	defer m.Close()
	again, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := readRecords(t, again); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened follower holds %d records unlike the leader's %d", len(got), len(want))
	}
}

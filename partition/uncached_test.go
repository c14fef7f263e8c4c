package partition

import (
	"bytes"
	"fmt"
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
	refuse bool
	// plain and uncached count the bytes written to segment files.
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
		f.fs.plain.Add(int64(len(p)))
	}
	return f.File.Write(p)
}

func (f segWritesFile) WriteUncached(p []byte) (int, bool, error) {
	f.fs.tried.Add(1)
	if f.fs.refuse {
		return 0, false, nil
	}
	if f.seg {
		f.fs.uncached.Add(int64(len(p)))
	}
	n, err := f.File.Write(p)
	return n, true, err
}

// bigRecordsLog returns a leader's log of n records of 4 KiB values, one
// a batch.
func bigRecordsLog(t *testing.T, c *fakeClock, n int) *Log {
	t.Helper()
	l := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{Now: c.Now})
	for i := range n {
		v := bytes.Repeat([]byte{byte(i)}, 4<<10)
		mustAppend(t, l, keyBatch(fmt.Sprintf("k%d", i), v, c.Now().UnixMilli()), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return l
}

// replicate copies every batch of leader into follower with append, as a
// follower's fetches of up to 200 KB would.
func replicate(t *testing.T, leader *Log, append func([]byte) (AppendInfo, error)) {
	t.Helper()
	for off := int64(0); off < leader.LogEndOffset(); {
		ri, err := leader.Read(off, 200_000, leader.LogEndOffset(), true)
		if err != nil || len(ri.Records) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		if _, err := append(ri.Records); err != nil {
			t.Fatalf("append at %d: %v", off, err)
		}
		off = ri.NextOffset
	}
}

// replicaOn opens a Manager over fs and replicates leader into its log of
// t-0 with uncached appends.
func replicaOn(t *testing.T, c *fakeClock, fs FS, leader *Log) (*Manager, *Log) {
	t.Helper()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return smallConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	follower, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, leader, follower.AppendAsFollowerUncached)
	return m, follower
}

// A follower's log through the Manager writes the whole pages its big
// appends fill uncached, and the partial page each ends in through the
// page cache; its small appends and a leader's appends all go through the
// page cache. The follower's log holds exactly the leader's records.
func TestFollowerAppendsAreUncachedLeaderAppendsAreNot(t *testing.T) {
	c := newClock()
	leader := bigRecordsLog(t, c, 200)

	fs := &segWritesFS{FS: NewMemFS()}
	m, follower := replicaOn(t, c, fs, leader)
	unc, plain := fs.uncached.Load(), fs.plain.Load()
	if unc == 0 || plain > (unc+plain)/8 {
		t.Fatalf("follower wrote its segments with %d bytes uncached and %d plain, want all but the appends' last pages uncached", unc, plain)
	}
	if got, want := readRecords(t, follower), readRecords(t, leader); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower holds %d records unlike the leader's %d", len(got), len(want))
	}

	led, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 1})
	if err != nil {
		t.Fatal(err)
	}
	before := fs.uncached.Load()
	big := bigRecordsLog(t, c, 20)
	ri, err := big.Read(0, 1<<20, big.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, err := ValidateBatches(ri.Records, math32)
	if err != nil || len(hdrs) != 20 {
		t.Fatalf("%d batches read: %v", len(hdrs), err)
	}
	if _, err := led.Append(ri.Records, 0); err != nil {
		t.Fatal(err)
	}
	if fs.uncached.Load() != before {
		t.Fatal("a leader's append was written uncached")
	}

	smallLeader := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{Now: c.Now})
	fillLog(t, smallLeader, 50, 50, c.Now().UnixMilli())
	smallFollower, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 2})
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, smallLeader, smallFollower.AppendAsFollowerUncached)
	if fs.uncached.Load() != before {
		t.Fatal("a follower's small appends were written uncached")
	}
}

// A file system that refuses uncached writes gets the same bytes written
// plainly, and is not asked again.
func TestRefusedUncachedWritesFallBackToPlainWrites(t *testing.T) {
	c := newClock()
	leader := bigRecordsLog(t, c, 100)

	fs := &segWritesFS{FS: NewMemFS(), refuse: true}
	_, follower := replicaOn(t, c, fs, leader)
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
	leader := bigRecordsLog(t, c, 300)
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

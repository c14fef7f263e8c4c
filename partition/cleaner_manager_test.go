package partition

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
)

func TestManagerCleansCompactedLogsAndWritesTheCheckpoint(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}
	configFor := func(topic string) Config {
		if topic == "compacted" {
			return compactConfig()
		}
		cfg := compactConfig()
		cfg.Compact = false
		return cfg
	}
	m, err := OpenManager(fs, mcfg, configFor, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := m.GetOrCreate(TopicPartition{"plain", 0})
	l, _ := m.GetOrCreate(TopicPartition{"compacted", 0})
	fillLog(t, plain, 200, 10, c.Now().UnixMilli())
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
	plainSize := plain.Size()
	run := m.newCleanRun()
	if !m.cleanOnce(run) {
		t.Fatal("nothing cleaned")
	}
	if m.cleanOnce(run) {
		t.Fatal("cleaned again with nothing dirty")
	}
	if plain.Size() != plainSize {
		t.Fatal("a delete-policy log was cleaned")
	}
	end := m.CleanerCheckpoint(TopicPartition{"compacted", 0})
	if end <= 0 {
		t.Fatalf("checkpoint %d", end)
	}
	checkCompacted(t, readRecords(t, l), written, end)
	cp := string(readFileBytes(t, fs, "/d1/"+cleanerCheckpointFile))
	if !strings.HasPrefix(cp, "0\n1\n") || !strings.Contains(cp, "compacted 0 ") {
		t.Fatalf("cleaner-offset-checkpoint %q", cp)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(fs, mcfg, configFor, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := m2.CleanerCheckpoint(TopicPartition{"compacted", 0}); got != end {
		t.Fatalf("checkpoint after restart %d, want %d", got, end)
	}
}

func TestManagerCleanerThreadsRunInTheBackground(t *testing.T) {
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Cleaner: CleanerConfig{Threads: 2, Backoff: 10 * time.Millisecond}}
	m, err := OpenManager(fs, mcfg, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreate(TopicPartition{"c", 0})
	written := fillLog(t, l, 200, 10, time.Now().UnixMilli()-1000)
	m.Start()
	if err := testkit.Poll(10*time.Second, func() error {
		if m.CleanerCheckpoint(TopicPartition{"c", 0}) <= 0 {
			return fmt.Errorf("the cleaner threads never cleaned the log")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, readRecords(t, l), written, m.CleanerCheckpoint(TopicPartition{"c", 0}))
}

// Close does not wait for a long cleaning to finish: it stops it, and
// the log is left as it was or partly cleaned, whole either way.
func TestManagerCloseStopsACleaning(t *testing.T) {
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1}
	m, err := OpenManager(fs, mcfg, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.GetOrCreate(TopicPartition{"c", 0})
	written := fillLog(t, l, 300, 10, time.Now().UnixMilli()-1000)
	run := m.newCleanRun()
	run.m = newOffsetMap(1<<20, 0.9)
	run.hook = func(step string) error {
		if step == "rename-final" {
			close(m.stop) // shutdown begins during the first swap
		}
		return nil
	}
	m.cleanOnce(run)
	if st, ok := m.LastCleaning(TopicPartition{"c", 0}); ok {
		t.Fatalf("a stopped cleaning recorded as done: %+v", st)
	}
	checkCompacted(t, readRecords(t, l), written, 1<<62)
	m.stop = make(chan struct{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// A truncation below the cleaner checkpoint makes what it replaced dirty
// again: the checkpoint follows it down.
func TestTruncationLowersTheCleanerCheckpoint(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{"c", 0}
	l, _ := m.GetOrCreate(tp)
	fillLog(t, l, 200, 10, c.Now().UnixMilli())
	run := m.newCleanRun()
	if !m.cleanOnce(run) {
		t.Fatal("nothing cleaned")
	}
	cp := m.CleanerCheckpoint(tp)
	if err := l.TruncateTo(cp - 20); err != nil {
		t.Fatal(err)
	}
	// The replaced offsets come back as 20 updates of one key no later
	// record updates.
	for i := 0; i < 20; i++ {
		mustAppend(t, l, keyBatch("t", []byte{byte(i)}, c.Now().UnixMilli()), 0)
	}
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
	for m.cleanOnce(run) {
	}
	if got := m.CleanerCheckpoint(tp); got <= cp-20 {
		t.Fatalf("checkpoint %d after cleaning again", got)
	}
	end := m.CleanerCheckpoint(tp)
	seen := map[string]int{}
	for _, r := range readRecords(t, l) {
		if r.off >= cp-20 && r.off < end {
			seen[r.key]++
			if seen[r.key] > 1 {
				t.Fatalf("key %s twice in [%d, %d): the truncated range was never cleaned", r.key, cp-20, end)
			}
		}
	}
	_ = written
}

// Once the delete horizon of its tombstones passes, a log is cleaned
// again even with nothing dirty, and the tombstones go.
func TestManagerCleansForExpiredTombstones(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return cfg }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreate(TopicPartition{"c", 0})
	fillLog(t, l, 100, 10, c.Now().UnixMilli())
	mustAppend(t, l, keyBatch("k3", nil, c.Now().UnixMilli()), 0)
	fillLog(t, l, 100, 3, c.Now().UnixMilli())
	run := m.newCleanRun()
	for m.cleanOnce(run) {
	}
	has := func() bool {
		for _, r := range readRecords(t, l) {
			if r.key == "k3" {
				return true
			}
		}
		return false
	}
	if !has() {
		t.Fatal("tombstone dropped at once")
	}
	c.Advance(59 * time.Second)
	if m.cleanOnce(run) {
		t.Fatal("cleaned before the delete horizon with nothing dirty")
	}
	c.Advance(2 * time.Second)
	if !m.cleanOnce(run) {
		t.Fatal("not cleaned once the delete horizon passed")
	}
	if has() {
		t.Fatal("tombstone kept past its delete horizon")
	}
	if m.cleanOnce(run) {
		t.Fatal("cleaned again with no horizon left")
	}
}

// Deleting a log removes its cleaner checkpoint from disk: a log recreated
// under the same name after a crash starts dirty.
func TestDeleteDropsTheCleanerCheckpoint(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}
	m, err := OpenManager(fs, mcfg, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"c", 0}
	l, _ := m.GetOrCreate(tp)
	fillLog(t, l, 200, 10, c.Now().UnixMilli())
	m.cleanOnce(m.newCleanRun())
	if m.CleanerCheckpoint(tp) <= 0 {
		t.Fatal("not cleaned")
	}
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(fs.CrashClone(), mcfg, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := m2.CleanerCheckpoint(tp); got != -1 {
		t.Fatalf("checkpoint %d survived the log's deletion", got)
	}
	_ = m.Close()
}

// The throttle holds the cleaner's reads to log.cleaner.io.max.bytes.per.second.
func TestCleanerThrottleSleepsToTheRate(t *testing.T) {
	var slept time.Duration
	th := newThrottler(1 << 20) // 1 MiB/s
	th.sleep = func(d time.Duration) { slept += d }
	th.start = time.Now()
	for i := 0; i < 8; i++ {
		th.wait(64 << 10) // 512 KiB in all: about half a second's worth
	}
	if slept < 400*time.Millisecond {
		t.Fatalf("slept %v for 512 KiB at 1 MiB/s", slept)
	}
	slept = 0
	unlimited := newThrottler(1.7976931348623157e308)
	unlimited.sleep = func(d time.Duration) { slept += d }
	unlimited.wait(1 << 30)
	if slept != 0 {
		t.Fatal("the default rate throttled")
	}
}

func TestCleanerDisabledCleansNothing(t *testing.T) {
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Cleaner: CleanerConfig{Disable: true, Backoff: time.Millisecond}}
	m, err := OpenManager(fs, mcfg, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.GetOrCreate(TopicPartition{"c", 0})
	fillLog(t, l, 200, 10, time.Now().UnixMilli()-1000)
	m.Start()
	if m.cleaner.threads != 0 {
		t.Fatalf("log.cleaner.enable=false and %d cleaner threads started", m.cleaner.threads)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// A log whose cleaning fails on a corrupt record is marked uncleanable
// and skipped, not retried at every backoff; the other logs are cleaned.
func TestCorruptLogIsMarkedUncleanable(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, Now: c.Now}, func(string) Config { return compactConfig() }, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bad, _ := m.GetOrCreate(TopicPartition{"bad", 0})
	good, _ := m.GetOrCreate(TopicPartition{"good", 0})
	// A batch whose CRC is right but whose record framing is not.
	b := keyBatch("k", []byte("v"), c.Now().UnixMilli())
	b[BatchHeaderSize] = 0x7f // record length far beyond the batch
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	mustAppend(t, bad, b, 0)
	fillLog(t, bad, 200, 10, c.Now().UnixMilli())
	fillLog(t, good, 100, 10, c.Now().UnixMilli())
	run := m.newCleanRun()
	for i := 0; i < 5 && m.cleanOnce(run); i++ {
	}
	if m.cleanOnce(run) {
		t.Fatal("the cleaner keeps retrying a corrupt log")
	}
	if u := m.Uncleanable(); len(u) != 1 || u[0].Topic != "bad" {
		t.Fatalf("uncleanable logs %v", u)
	}
	if m.CleanerCheckpoint(TopicPartition{"good", 0}) <= 0 {
		t.Fatal("the good log was not cleaned")
	}
}

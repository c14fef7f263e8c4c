package partition

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/rs/zerolog"
)

func TestManagerOpenCloseReopen(t *testing.T) {
	fs := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(fs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tps := []TopicPartition{{"a", 0}, {"a", 1}, {"b-x", 0}, {"b-x", 12}}
	for i, tp := range tps {
		l, err := m.GetOrCreate(tp)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i; j++ {
			mustAppend(t, l, testkit.SimpleBatch(2, 1, 10), 0)
		}
		l.SetHighWatermark(int64(2 * i))
	}
	// Spread over both dirs.
	for _, d := range mcfg.Dirs {
		names, _ := fs.ReadDir(d)
		n := 0
		for _, x := range names {
			if _, ok := parsePartitionDir(x); ok {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("%s holds %d partitions: %v", d, n, names)
		}
	}
	// Junk that must be skipped or cleaned.
	fs.MkdirAll("/d1/not_a_partition", 0o755)
	fs.MkdirAll("/d1/gone-3.abc-delete", 0o755)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range mcfg.Dirs {
		if ok, _, _ := fs.Stat(filepath.Join(d, cleanShutdownFile)); !ok {
			t.Fatalf("no clean shutdown marker in %s", d)
		}
		meta := string(readFileBytes(t, fs, filepath.Join(d, metaPropertiesFile)))
		if !strings.Contains(meta, "cluster.id=c1") || !strings.Contains(meta, "node.id=1") || !strings.Contains(meta, "version=1") {
			t.Fatalf("meta.properties %q", meta)
		}
	}
	hw := string(readFileBytes(t, fs, "/d1/replication-offset-checkpoint")) + string(readFileBytes(t, fs, "/d2/replication-offset-checkpoint"))
	if !strings.Contains(hw, "b-x 12 6\n") {
		t.Fatalf("HW checkpoint %q", hw)
	}

	m, err = OpenManager(fs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range mcfg.Dirs {
		if ok, _, _ := fs.Stat(filepath.Join(d, cleanShutdownFile)); ok {
			t.Fatal("clean shutdown marker left while running")
		}
	}
	if ok, _, _ := fs.Stat("/d1/gone-3.abc-delete"); ok {
		t.Fatal("-delete dir not removed")
	}
	if got := m.Partitions(); len(got) != 4 || got[2] != (TopicPartition{"b-x", 0}) {
		t.Fatalf("partitions %v", got)
	}
	for i, tp := range tps {
		l := m.Get(tp)
		if l == nil || l.LogEndOffset() != int64(2*(i+1)) || l.HighWatermark() != int64(2*i) || l.RecoveryPoint() != l.LogEndOffset() {
			t.Fatalf("%s after reopen: %+v", tp, l)
		}
	}
	if err := m.Delete(tps[0]); err != nil {
		t.Fatal(err)
	}
	if m.Get(tps[0]) != nil {
		t.Fatal("deleted log still present")
	}
	// Crash (no Close): the next open is unclean and recovers.
	l := m.Get(tps[3])
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 10), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	m2, err := OpenManager(crashed, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Get(tps[3]).LogEndOffset(); got != 10 {
		t.Fatalf("after crash LEO %d", got)
	}
	if m2.Get(tps[0]) != nil {
		t.Fatal("deleted partition came back")
	}
	m2.Start()
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	_ = m.Close()

	// Wrong node id is refused.
	if _, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d1"}, NodeID: 2, ClusterID: "c1"}, nil, testLogger(t)); err == nil {
		t.Fatal("node.id mismatch accepted")
	}
}

func TestOffsetCheckpointFormat(t *testing.T) {
	m := map[TopicPartition]int64{{"b", 1}: 5, {"a", 0}: 7}
	enc := encodeOffsetCheckpoint(m)
	if string(enc) != "0\n2\na 0 7\nb 1 5\n" {
		t.Fatalf("%q", enc)
	}
	back, err := decodeOffsetCheckpoint(enc)
	if err != nil || len(back) != 2 || back[TopicPartition{"b", 1}] != 5 {
		t.Fatal(back, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\na 0 7\n", "0\n1\na x 7\n"} {
		if _, err := decodeOffsetCheckpoint([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// The flush.ms check skips logs without flush.ms, and picks up a flush.ms
// set later by a config change.
func TestManagerFlushDueFlushesOnlyLogsWithFlushMs(t *testing.T) {
	fs := NewMemFS()
	clk := newClock()
	m := openManagerOn(t, fs, ManagerConfig{Dirs: []string{"/d"}, NodeID: 1, Defaults: smallConfig(), Now: clk.Now})
	plain, timed := logOf(t, m, "plain"), logOf(t, m, "timed")
	mustAppend(t, plain, testkit.SimpleBatch(2, 1, 1), 0)
	mustAppend(t, timed, testkit.SimpleBatch(2, 1, 1), 0)
	clk.Advance(time.Hour)
	m.FlushDue()
	if plain.RecoveryPoint() != 0 || timed.RecoveryPoint() != 0 {
		t.Fatalf("flushed without flush.ms: recovery points %d, %d", plain.RecoveryPoint(), timed.RecoveryPoint())
	}
	cfg := smallConfig()
	cfg.FlushMs = 1000
	timed.UpdateConfig(cfg)
	clk.Advance(time.Second)
	m.FlushDue()
	if timed.RecoveryPoint() != 2 {
		t.Fatalf("log with flush.ms 1000 not flushed after a second: recovery point %d", timed.RecoveryPoint())
	}
	if plain.RecoveryPoint() != 0 {
		t.Fatalf("log without flush.ms flushed: recovery point %d", plain.RecoveryPoint())
	}
}

// BenchmarkFlushDueIdle is the flush.ms check over 2,000 logs of which
// none has flush.ms, as every second on an idle broker.
func BenchmarkFlushDueIdle(b *testing.B) {
	fs := NewMemFS()
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d"}, NodeID: 1, Defaults: smallConfig()}, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for i := range 2000 {
		if _, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		m.FlushDue()
	}
}

// Closing a Manager with many logs closes a bounded number at once: one
// goroutine per log had thousands fsyncing together, and a node with
// 10,000 written partitions took longer than 30 s to shut down.
func TestManagerCloseClosesABoundedNumberOfLogsAtOnce(t *testing.T) {
	var inFlight, most atomic.Int64
	fs := &ErrorFS{FS: NewMemFS(), Inject: func(op, _ string) error {
		if op == "sync" {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond)
			inFlight.Add(-1)
		}
		return nil
	}}
	m, err := OpenManager(fs, ManagerConfig{Dirs: []string{"/d"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	const logs = 4 * closeParallelism
	for i := range logs {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testkit.SimpleBatch(1, 1, 10), 0)
	}
	most.Store(0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got > closeParallelism {
		t.Fatalf("%d file syncs at once while closing %d logs, want at most %d (one log at a time each)", got, logs, closeParallelism)
	}
}

// The flush.ms scheduler does not wake while no log has a flush.ms (the
// default): it starts when a log gets one, flushes it, and stops again
// once none has.
func TestFlushSchedulerRunsOnlyWhileALogHasFlushMs(t *testing.T) {
	fs := NewMemFS()
	m := openManagerOn(t, fs, ManagerConfig{Dirs: []string{"/d"}, NodeID: 1, Defaults: smallConfig(), FlushSchedulerInterval: time.Millisecond,
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour})
	l := logOf(t, m, "t")
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 0)
	m.Start()
	// A running scheduler would scan every millisecond.
	time.Sleep(100 * time.Millisecond)
	if n := m.flushScans.Load(); n != 0 {
		t.Fatalf("the flush.ms scheduler scanned %d times with no log having a flush.ms", n)
	}

	cfg := smallConfig()
	cfg.FlushMs = 0
	l.UpdateConfig(cfg)
	for l.RecoveryPoint() != 2 {
		time.Sleep(time.Millisecond)
	}

	l.UpdateConfig(smallConfig())
	// Stopped once a scan found no log with a flush.ms: the count
	// settles.
	for {
		before := m.flushScans.Load()
		time.Sleep(50 * time.Millisecond)
		if m.flushScans.Load() == before {
			break
		}
	}
	settled := m.flushScans.Load()
	time.Sleep(100 * time.Millisecond)
	if n := m.flushScans.Load(); n != settled {
		t.Fatalf("the flush.ms scheduler kept scanning (%d more) after the last flush.ms was removed", n-settled)
	}
}

// openManagerOn opens a Manager on fs, closed when the test ends.
func openManagerOn(t *testing.T, fs FS, mcfg ManagerConfig) *Manager {
	t.Helper()
	m, err := OpenManager(fs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// logOf is partition 0 of topic on m, created if need be.
func logOf(t *testing.T, m *Manager, topic string) *Log {
	t.Helper()
	l, err := m.GetOrCreate(TopicPartition{Topic: topic, Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

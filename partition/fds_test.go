package partition

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// appendTimed appends n batches of 2 records with rising timestamps.
func appendTimed(t *testing.T, l *Log, n int, ts0 int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, ts0+int64(i)*10, 40), 0)
	}
}

func indexCopies(l *Log) (idx, tidx [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.segs {
		idx = append(idx, append([]byte(nil), s.idx.buf...))
		tidx = append(tidx, append([]byte(nil), s.tidx.buf...))
	}
	return idx, tidx
}

// A segment keeps only its log file open: its indexes live in memory and
// are written with open-append-close, so a partition with one segment costs
// one descriptor, through appends, flushes, rolls and a clean reopen.
func TestLogHoldsOneOpenFilePerSegment(t *testing.T) {
	mem := NewMemFS()
	cfg := smallConfig()
	cfg.SegmentBytes = 2000
	l := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
	if got := mem.OpenFiles(); got != 1 {
		t.Fatalf("new log holds %d open files, want 1", got)
	}
	appendTimed(t, l, 5, 1000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := mem.OpenFiles(); got != 1 {
		t.Fatalf("one-segment log holds %d open files after appends and a flush, want 1", got)
	}
	appendTimed(t, l, 60, 2000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := l.NumSegments()
	if segs < 3 {
		t.Fatalf("want several segments, have %d", segs)
	}
	if got := mem.OpenFiles(); got != segs {
		t.Fatalf("%d-segment log holds %d open files, want %d", segs, got, segs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mem.OpenFiles(); got != 0 {
		t.Fatalf("closed log holds %d open files", got)
	}
	l2 := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
	defer l2.Close()
	if got := mem.OpenFiles(); got != segs {
		t.Fatalf("reopened %d-segment log holds %d open files, want %d", segs, got, segs)
	}
}

// fdCount is the number of this process's open file descriptors.
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// A broker's partitions (each with one segment) cost one descriptor each
// on the real filesystem: the manager's checkpoints, producer snapshots,
// leader-epoch checkpoints and partition.metadata hold none.
func TestManagerHoldsOneDescriptorPerPartition(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	dir := t.TempDir()
	mcfg := ManagerConfig{Dirs: []string{dir}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	before := fdCount(t)
	m, err := OpenManager(OSFS(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := 0; i < n; i++ {
		l, err := m.GetOrCreate(TopicPartition{Topic: "fds", Partition: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		appendTimed(t, l, 3, 1000)
		l.SetHighWatermark(l.LogEndOffset())
		if err := l.WriteProducerSnapshot(l.LogEndOffset(), []byte("snapshot")); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	// A little slack for the runtime's own descriptors (epoll, pipes).
	if got := fdCount(t) - before; got > n+4 {
		t.Fatalf("%d partitions hold %d descriptors, want about %d", n, got, n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(OSFS(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := fdCount(t) - before; got > n+4 {
		t.Fatalf("%d reopened partitions hold %d descriptors, want about %d", n, got, n)
	}
}

// Indexes written out at flushes and close come back at a clean reopen as
// a full rebuild makes them, and reads by offset and by timestamp are right
// in every segment.
func TestIndexesSurviveCleanRestartAsRebuilt(t *testing.T) {
	mem := NewMemFS()
	cfg := smallConfig()
	cfg.SegmentBytes = 1500
	l := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
	appendTimed(t, l, 40, 1000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	appendTimed(t, l, 7, 5000) // unflushed until Close
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clean := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
	defer clean.Close()
	rebuilt := openTestLog(t, mem.CrashClone(), cfg, OpenOptions{RecoveryPoint: 0})
	defer rebuilt.Close()
	ci, ct := indexCopies(clean)
	ri, rt := indexCopies(rebuilt)
	if len(ci) < 3 || len(ci) != len(ri) {
		t.Fatalf("%d segments after clean reopen, %d after rebuild", len(ci), len(ri))
	}
	for i := range ci {
		if !bytes.Equal(ci[i], ri[i]) || !bytes.Equal(ct[i], rt[i]) {
			t.Fatalf("segment %d: indexes after clean reopen (%d, %d bytes) differ from rebuilt (%d, %d bytes)",
				i, len(ci[i]), len(ct[i]), len(ri[i]), len(rt[i]))
		}
		if len(ci[i]) == 0 {
			t.Fatalf("segment %d has an empty offset index", i)
		}
	}
	checkReads(t, clean, leo)
}

// checkReads reads every offset below leo singly and looks up every
// batch's timestamp (batches from appendTimed).
func checkReads(t *testing.T, l *Log, leo int64) {
	t.Helper()
	l.SetHighWatermark(leo)
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), leo)
	}
	for off := int64(0); off < leo; off++ {
		ri, err := l.Read(off, 1, leo, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		h := parseHeaderUnchecked(ri.Records)
		if h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read %d returned batch %d..%d", off, h.BaseOffset, h.LastOffset())
		}
	}
	for _, h := range readAll(t, l, 0, leo) {
		off, ts, _, ok, err := l.OffsetForTimestamp(h.FirstTimestamp)
		if err != nil || !ok || off != h.BaseOffset || ts != h.FirstTimestamp {
			t.Fatalf("timestamp %d: offset %d ts %d ok %v err %v, want offset %d", h.FirstTimestamp, off, ts, ok, err, h.BaseOffset)
		}
	}
}

// After kill -9 an index file may be missing, shorter than its log, torn
// or pointing past the log's end; loading notices and rebuilds it (or
// extends a short offset index over the tail), whether or not the shutdown
// is taken for clean, and every read is right.
func TestDamagedIndexRebuiltAfterCrash(t *testing.T) {
	damages := map[string]func(t *testing.T, fs *MemFS, path string){
		"missing": func(t *testing.T, fs *MemFS, path string) {
			if err := fs.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"short": func(t *testing.T, fs *MemFS, path string) {
			cutFile(t, fs, path, func(n int) int { return n / 2 / 24 * 24 })
		},
		"torn": func(t *testing.T, fs *MemFS, path string) { cutFile(t, fs, path, func(n int) int { return n - 5 }) },
		"beyond": func(t *testing.T, fs *MemFS, path string) {
			f, err := fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var e []byte
			if bytes.HasSuffix([]byte(path), []byte(indexSuffix)) {
				e = putOffsetEntry(nil, 1<<20, 1<<30)
			} else {
				e = putTimeEntry(nil, 1<<40, 1<<20)
			}
			if _, err := f.Write(e); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range damages {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			for _, cleanFlag := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s%s/clean=%v", name, suffix, cleanFlag), func(t *testing.T) {
					mem := NewMemFS()
					cfg := smallConfig()
					cfg.SegmentBytes = 1500
					l := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
					appendTimed(t, l, 40, 1000)
					leo := l.LogEndOffset()
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					want, wantT := indexCopies(openTestLog(t, mem.CrashClone(), cfg, OpenOptions{RecoveryPoint: 0}))
					crashed := mem.CrashClone()
					// The first segment's index (behind the recovery point).
					damage(t, crashed, "/data/t-0/"+segmentName(0)+suffix)
					l2 := openTestLog(t, crashed, cfg, OpenOptions{CleanShutdown: cleanFlag, RecoveryPoint: leo})
					defer l2.Close()
					gi, gt := indexCopies(l2)
					if name == "short" && suffix == timeIndexSuffix {
						// A shorter time index that is consistent is
						// kept, as Kafka does (lookups scan further).
						gt[0] = wantT[0]
					}
					if len(gi) != len(want) || !bytes.Equal(gi[0], want[0]) || !bytes.Equal(gt[0], wantT[0]) {
						t.Fatalf("first segment's indexes (%d, %d bytes) differ from a rebuild (%d, %d bytes)",
							len(gi[0]), len(gt[0]), len(want[0]), len(wantT[0]))
					}
					checkReads(t, l2, leo)
				})
			}
		}
	}
}

func cutFile(t *testing.T, fs *MemFS, path string, size func(int) int) {
	t.Helper()
	data, _, err := readWholeFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size(len(data)))); err != nil {
		t.Fatal(err)
	}
}

// A flush round makes the indexes of the segments it passes durable before
// the recovery point moves past them: after a crash, their files hold what
// memory held, so loading them needs no rebuild.
func TestFlushMakesIndexesOfRolledSegmentsDurable(t *testing.T) {
	mem := NewMemFS()
	cfg := smallConfig()
	cfg.SegmentBytes = 1500
	l := openTestLog(t, mem, cfg, OpenOptions{CleanShutdown: true})
	defer l.Close()
	appendTimed(t, l, 40, 1000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	l.mu.Lock()
	segs := append([]*segment(nil), l.mu.segs...)
	l.mu.Unlock()
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		for _, ix := range []*index{s.idx, s.tidx} {
			got, _, err := readWholeFile(crashed, ix.path())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, ix.buf) || len(got) == 0 {
				t.Fatalf("%s after a crash holds %d bytes, memory %d", ix.path(), len(got), len(ix.buf))
			}
		}
	}
}

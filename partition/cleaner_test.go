package partition

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gokafka/gokafka/idempotent"
)

// kv is one record as read back from a log.
type kv struct {
	off   int64
	key   string
	value []byte // nil for a tombstone
}

func compactConfig() Config {
	cfg := DefaultConfig()
	cfg.Compact = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 128
	return cfg
}

func testRun(c *fakeClock, mapBytes int64) *cleanRun {
	return &cleanRun{m: newOffsetMap(mapBytes, 0.9), now: c.Now}
}

// keyBatch is a batch of one record key=value (nil value: tombstone) with
// timestamp ts.
func keyBatch(key string, value []byte, ts int64) []byte {
	return NewBatchBuilder(ts).Add(Record{Key: []byte(key), Value: value}).Build()
}

// readRecords reads every record of the log from its start, checking
// that offsets only grow.
func readRecords(t testing.TB, l *Log) []kv {
	t.Helper()
	var out []kv
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(ri.Records) == 0 {
			break
		}
		hs, err := ValidateReplicatedBatches(ri.Records, math32)
		if err != nil {
			t.Fatalf("read %d returned invalid batches: %v", off, err)
		}
		pos := 0
		for _, h := range hs {
			b := ri.Records[pos : pos+h.Size()]
			pos += h.Size()
			if h.IsControl() {
				continue
			}
			if err := eachRecord(h, b, math32, func(o, _ int64, body []byte) {
				r, err := recordOf(body)
				if err != nil {
					t.Fatal(err)
				}
				if o <= last {
					t.Fatalf("offset %d after %d", o, last)
				}
				last = o
				if o >= off {
					out = append(out, kv{off: o, key: string(r.Key), value: r.Value})
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		off = hs[len(hs)-1].NextOffset()
	}
	return out
}

func recordOf(body []byte) (Record, error) {
	it := &RecordIter{withBody: true, Body: body}
	return it.Record()
}

// latest is the model: each key's last record (with its offset).
func latest(recs []kv) map[string]kv {
	m := map[string]kv{}
	for _, r := range recs {
		m[r.key] = r
	}
	return m
}

// fillLog appends n records over `keys` keys (value "v<offset>"), one a
// batch, then commits them all (HW = LEO).
func fillLog(t *testing.T, l *Log, n, keys int, ts int64) []kv {
	t.Helper()
	var written []kv
	for i := 0; i < n; i++ {
		off := l.LogEndOffset()
		k := fmt.Sprintf("k%d", i%keys)
		v := []byte(fmt.Sprintf("v%d", off))
		mustAppend(t, l, keyBatch(k, v, ts), 0)
		written = append(written, kv{off: off, key: k, value: v})
	}
	l.SetHighWatermark(l.LogEndOffset())
	return written
}

// checkCompacted checks the cleaned log against what was written: every
// record read is one that was written at that offset; below end each
// key appears once, with its latest value; at and after end every record
// written is there.
func checkCompacted(t *testing.T, got, written []kv, end int64) {
	t.Helper()
	byOff := map[int64]kv{}
	for _, w := range written {
		byOff[w.off] = w
	}
	seen := map[string]int{}
	var tail int
	for _, g := range got {
		w, ok := byOff[g.off]
		if !ok || w.key != g.key || !bytes.Equal(w.value, g.value) {
			t.Fatalf("record at %d is %q=%q, written %q=%q", g.off, g.key, g.value, w.key, w.value)
		}
		if g.off < end {
			seen[g.key]++
			if end == 1<<62 {
				seen[g.key] = 1 // not compacted: only the latest is checked
			}
		} else {
			tail++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s appears %d times in the cleaned section", k, n)
		}
	}
	want := latest(written)
	gotLatest := latest(got)
	for k, w := range want {
		g, ok := gotLatest[k]
		if w.value == nil {
			continue // tombstones are checked by their own tests
		}
		if !ok || g.off != w.off {
			t.Errorf("key %s: latest is %+v, want offset %d", k, g, w.off)
		}
	}
	wantTail := 0
	for _, w := range written {
		if w.off >= end {
			wantTail++
		}
	}
	if end < 1<<62 && tail != wantTail {
		t.Errorf("%d records at or after %d, want %d", tail, end, wantTail)
	}
}

func TestCleanerKeepsLatestValuePerKeyAndTheTail(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	l := openTestLog(t, fs, compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 300, 10, c.Now().UnixMilli())
	segsBefore, sizeBefore := l.NumSegments(), l.Size()

	st, err := l.clean(testRun(c, 1<<20), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	active := l.mu.segs[len(l.mu.segs)-1].base
	if st.End != active {
		t.Fatalf("cleaned to %d, want the active segment's base %d", st.End, active)
	}
	checkCompacted(t, readRecords(t, l), written, st.End)
	if l.Size() >= sizeBefore/2 {
		t.Errorf("size %d -> %d: not compacted", sizeBefore, l.Size())
	}
	// Segments are grouped by their size before cleaning (as Kafka
	// does): full ones are cleaned one by one, and the small cleaned
	// ones are merged by the next cleaning.
	written = append(written, fillLog(t, l, 30, 10, c.Now().UnixMilli())...)
	if st, err = l.clean(testRun(c, 1<<20), st.End, true); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() >= segsBefore/2 {
		t.Errorf("segments %d -> %d: cleaned segments not merged", segsBefore, l.NumSegments())
	}
	if l.LogEndOffset() != 330 || l.LogStartOffset() != 0 {
		t.Errorf("offsets changed: [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
	// The cleaned log reopens as it is (its segments have no gaps
	// recovery could take for lost data).
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, fs.CrashClone(), compactConfig(), OpenOptions{Now: c.Now, HighWatermark: 330}) // unclean: every segment re-validated
	checkCompacted(t, readRecords(t, l2), written, st.End)
}

func TestCleanerNeedsTheDirtyRatio(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	fillLog(t, l, 100, 10, c.Now().UnixMilli())
	st, err := l.clean(testRun(c, 1<<20), -1, false)
	if err != nil || st.Passes == 0 {
		t.Fatalf("an all-dirty log not cleaned: %+v %v", st, err)
	}
	// Dirty bytes about as many as the clean ones: below a ratio of
	// 0.9, above one of 0.3.
	fillLog(t, l, 12, 10, c.Now().UnixMilli())
	cfg.MinCleanableDirtyRatio = 0.9
	l.UpdateConfig(cfg)
	st2, err := l.clean(testRun(c, 1<<20), st.End, false)
	if err != nil || st2.Passes != 0 {
		t.Fatalf("cleaned below min.cleanable.dirty.ratio: %+v %v", st2, err)
	}
	cfg.MinCleanableDirtyRatio = 0.3
	l.UpdateConfig(cfg)
	st2, err = l.clean(testRun(c, 1<<20), st.End, false)
	if err != nil || st2.Passes == 0 {
		t.Fatalf("not cleaned above min.cleanable.dirty.ratio: %+v %v", st2, err)
	}
}

func TestCleanerSeveralPassesWithAKeyMapSmallerThanTheKeys(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 400, 50, c.Now().UnixMilli())
	// Room for 20 keys: 50 keys over 400 records need many passes.
	st, err := l.clean(testRun(c, 24*23), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Passes < 3 {
		t.Fatalf("%d passes with a 20-entry map over 50 keys", st.Passes)
	}
	checkCompacted(t, readRecords(t, l), written, st.End)
}

func TestCleanerPreservesOffsetsTimestampsAndEpochs(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	base := c.Now().UnixMilli() - 10_000
	// Batches of 3 records, two keys updated by later batches: those
	// batches lose records and are re-written, gzip as they came.
	for i := 0; i < 60; i++ {
		b := NewBatchBuilder(base + int64(i)*10)
		b.Add(Record{Key: []byte(fmt.Sprintf("a%d", i%4)), Value: []byte("x"), TimestampDelta: 0})
		b.Add(Record{Key: []byte(fmt.Sprintf("u%d", i)), Value: []byte("unique"), TimestampDelta: 1})
		b.Add(Record{Key: []byte(fmt.Sprintf("b%d", i%4)), Value: []byte("y"), TimestampDelta: 2})
		raw := b.Build()
		h := parseHeaderUnchecked(raw)
		recs := raw[BatchHeaderSize:]
		gz, err := rebuildBatch(BatchHeader{BaseOffset: 0, PartitionLeaderEpoch: -1, Attributes: int16(CompressionGzip),
			LastOffsetDelta: h.LastOffsetDelta, FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, 3, h.MaxTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, gz, int32(i/20))
	}
	l.SetHighWatermark(l.LogEndOffset())
	before := map[int64]int64{} // offset -> timestamp
	epochBefore := map[int64]int32{}
	for _, v := range l.viewsLocked(0) {
		_, _ = scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
			b := make([]byte, h.Size())
			_, _ = v.s.log.ReadAt(b, pos)
			_ = eachRecord(h, b, math32, func(o, ts int64, _ []byte) { before[o] = ts; epochBefore[o] = h.PartitionLeaderEpoch })
			return true
		})
	}
	if _, err := l.clean(testRun(c, 1<<20), -1, true); err != nil {
		t.Fatal(err)
	}
	n, rewritten := 0, 0
	for _, v := range l.viewsLocked(0) {
		_, _ = scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
			b := make([]byte, h.Size())
			_, _ = v.s.log.ReadAt(b, pos)
			if h.NumRecords > 0 && h.Compression() != CompressionGzip {
				t.Errorf("batch at %d lost its codec: %d", h.BaseOffset, h.Compression())
			}
			if h.NumRecords > 0 && h.NumRecords < 3 {
				rewritten++
			}
			if err := eachRecord(h, b, math32, func(o, ts int64, _ []byte) {
				n++
				if want, ok := before[o]; !ok || want != ts {
					t.Errorf("record at %d has timestamp %d, had %d (present %v)", o, ts, want, ok)
				}
				if epochBefore[o] != h.PartitionLeaderEpoch {
					t.Errorf("record at %d in epoch %d, was %d", o, h.PartitionLeaderEpoch, epochBefore[o])
				}
			}); err != nil {
				t.Fatal(err)
			}
			return true
		})
	}
	if rewritten == 0 || n >= 180 {
		t.Fatalf("%d records kept, %d batches re-written", n, rewritten)
	}
}

func TestCleanerDropsTombstonesOnlyAfterDeleteRetention(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	written := fillLog(t, l, 100, 10, c.Now().UnixMilli())
	mustAppend(t, l, keyBatch("k3", nil, c.Now().UnixMilli()), 0)
	written = append(written, kv{off: 100, key: "k3"})
	fillLog(t, l, 40, 3, c.Now().UnixMilli()) // keys k0..k2 again, not k3
	hasTombstone := func() bool {
		for _, r := range readRecords(t, l) {
			if r.key == "k3" && r.value == nil {
				return true
			}
			if r.key == "k3" {
				t.Fatalf("k3's old value %q survived its tombstone", r.value)
			}
		}
		return false
	}
	run := testRun(c, 1<<20)
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTombstone() {
		t.Fatal("tombstone dropped by the cleaning that first cleaned it")
	}
	c.Advance(30 * time.Second)
	fillLog(t, l, 30, 3, c.Now().UnixMilli())
	if st, err = l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	if !hasTombstone() {
		t.Fatal("tombstone dropped before delete.retention.ms")
	}
	c.Advance(31 * time.Second)
	fillLog(t, l, 30, 3, c.Now().UnixMilli())
	if _, err = l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	if hasTombstone() {
		t.Fatal("tombstone kept after delete.retention.ms")
	}
}

func TestCleanerRespectsMinCompactionLag(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	old := fillLog(t, l, 100, 10, c.Now().UnixMilli()-120_000) // old enough
	young := fillLog(t, l, 100, 10, c.Now().UnixMilli()-1000)  // too young
	written := append(old, young...)
	st, err := l.clean(testRun(c, 1<<20), -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.End > 100 {
		t.Fatalf("cleaned to %d, into records younger than min.compaction.lag.ms", st.End)
	}
	got := readRecords(t, l)
	checkCompacted(t, got, written, st.End)
	for _, y := range young {
		found := false
		for _, g := range got {
			found = found || g.off == y.off
		}
		if !found {
			t.Fatalf("young record at %d was cleaned away", y.off)
		}
	}
}

func TestCleanerMaxCompactionLagForcesCleaningBelowTheRatio(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.99
	cfg.MaxCompactionLagMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	fillLog(t, l, 100, 10, c.Now().UnixMilli())
	st, _ := l.clean(testRun(c, 1<<20), -1, false)
	if st.Passes == 0 {
		t.Fatal("first cleaning skipped") // all dirty: ratio 1
	}
	fillLog(t, l, 30, 10, c.Now().UnixMilli())
	if st2, _ := l.clean(testRun(c, 1<<20), st.End, false); st2.Passes != 0 {
		t.Fatal("cleaned below the ratio before max.compaction.lag.ms")
	}
	c.Advance(61 * time.Second)
	if st2, _ := l.clean(testRun(c, 1<<20), st.End, false); st2.Passes == 0 {
		t.Fatal("not cleaned after max.compaction.lag.ms")
	}
}

func TestCleanerStopsAtTheHighWatermark(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
	l.SetHighWatermark(100)
	st, err := l.clean(testRun(c, 1<<20), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.End > 100 {
		t.Fatalf("cleaned to %d, above the HW 100", st.End)
	}
	checkCompacted(t, readRecords(t, l), written, st.End)
}

// txnBatch is a transactional batch of producer pid.
func txnBatch(pid int64, seq int32, key, value string, ts int64) []byte {
	b := NewBatchBuilder(ts)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, 0, seq, true
	return b.Add(Record{Key: []byte(key), Value: []byte(value)}).Build()
}

func TestCleanerRemovesAbortedTransactionsAndKeepsProducerState(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	ts := c.Now().UnixMilli()
	// Producer 7 aborts a transaction writing "gone"; producer 8 commits
	// one writing "kept"; producer 9's only batch is later overwritten.
	mustAppend(t, l, txnBatch(7, 0, "a", "gone", ts), 0)
	mustAppend(t, l, txnBatch(8, 0, "b", "kept", ts), 0)
	mustAppend(t, l, ControlBatch(7, 0, 0, false, ts), 0)
	mustAppend(t, l, ControlBatch(8, 0, 0, true, ts), 0)
	idem := NewBatchBuilder(ts)
	idem.ProducerID, idem.ProducerEpoch, idem.BaseSequence = 9, 0, 0
	mustAppend(t, l, idem.Add(Record{Key: []byte("c"), Value: []byte("old")}).Build(), 0)
	// Producer 7 writes on after its abort; producer 10's last batch is
	// an aborted one.
	p7 := NewBatchBuilder(ts)
	p7.ProducerID, p7.ProducerEpoch, p7.BaseSequence = 7, 0, 1
	mustAppend(t, l, p7.Add(Record{Key: []byte("d"), Value: []byte("p7")}).Build(), 0)
	mustAppend(t, l, txnBatch(10, 0, "e", "gone too", ts), 0)
	mustAppend(t, l, ControlBatch(10, 0, 0, false, ts), 0)
	written := fillLog(t, l, 60, 3, ts) // keys k0..k2
	mustAppend(t, l, keyBatch("c", []byte("new"), ts), 0)
	fillLog(t, l, 40, 3, ts)
	run := testRun(c, 1<<20)
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	_ = written
	type seen struct{ data, markers int }
	scan := func() (map[string]string, map[int64]*seen, map[int64]BatchHeader) {
		vals := map[string]string{}
		per := map[int64]*seen{}
		lastOf := map[int64]BatchHeader{}
		for _, v := range l.viewsLocked(0) {
			_, _ = scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
				if h.ProducerID >= 0 {
					if per[h.ProducerID] == nil {
						per[h.ProducerID] = &seen{}
					}
					if h.IsControl() {
						per[h.ProducerID].markers++
					} else {
						per[h.ProducerID].data++
						lastOf[h.ProducerID] = h
					}
				}
				return true
			})
		}
		for _, r := range readRecords(t, l) {
			vals[r.key] = string(r.value)
		}
		return vals, per, lastOf
	}
	vals, per, lastOf := scan()
	if vals["a"] == "gone" || vals["e"] == "gone too" {
		t.Error("aborted record survived cleaning")
	}
	if vals["b"] != "kept" || vals["c"] != "new" {
		t.Errorf("values after cleaning: %v", vals)
	}
	if per[7] == nil || per[7].markers != 1 || per[8] == nil || per[8].markers != 1 {
		t.Fatalf("markers dropped before delete.retention.ms: %+v %+v", per[7], per[8])
	}
	for _, pid := range []int64{7, 8, 9, 10} {
		h, ok := lastOf[pid]
		if !ok {
			t.Fatalf("producer %d's last batch is gone: its producer state would be lost", pid)
		}
		if h.ProducerEpoch != 0 || (h.BaseSequence != 0) != (pid == 7) {
			t.Errorf("producer %d's last batch lost its producer fields: %+v", pid, h)
		}
	}
	if lastOf[9].NumRecords != 0 || lastOf[10].NumRecords != 0 || lastOf[7].NumRecords != 1 {
		t.Errorf("last batches hold %d, %d, %d records, want 0, 0, 1", lastOf[9].NumRecords, lastOf[10].NumRecords, lastOf[7].NumRecords)
	}
	// After delete.retention.ms: producer 7's abort marker goes (its
	// batches are gone), producer 10's stays with its emptied batch (or
	// that batch would reopen the transaction when producer state is
	// rebuilt from the log), and the commit marker stays while its
	// record does.
	c.Advance(2 * time.Second)
	fillLog(t, l, 40, 3, c.Now().UnixMilli())
	if _, err := l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	vals, per, _ = scan()
	if per[7] == nil || per[7].markers != 0 {
		t.Errorf("producer 7: %+v; abort marker kept after delete.retention.ms with no batch left", per[7])
	}
	if per[10] == nil || per[10].markers != 1 || per[10].data != 1 {
		t.Errorf("producer 10: %+v; want its emptied batch and its marker", per[10])
	}
	if per[8] == nil || per[8].markers != 1 || vals["b"] != "kept" {
		t.Errorf("commit marker or its record dropped while the record lives: %+v %v", per[8], vals)
	}
}

func TestCleanerDoesNotCleanAnOpenTransaction(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	ts := c.Now().UnixMilli()
	fillLog(t, l, 50, 5, ts)
	open := l.LogEndOffset()
	mustAppend(t, l, txnBatch(7, 0, "k1", "pending", ts), 0)
	written := fillLog(t, l, 100, 5, ts)
	st, err := l.clean(testRun(c, 1<<20), -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.End > open {
		t.Fatalf("cleaned to %d past the open transaction at %d", st.End, open)
	}
	_ = written
}

// TestCleanerSwapSurvivesACrashAtEachStep simulates a kill -9 before each
// step of a group's swap and checks that the log reopened from what was
// durable then holds the same records as either the log before the
// cleaning or after it, and opens without error.
func TestCleanerSwapSurvivesACrashAtEachStep(t *testing.T) {
	for _, step := range []string{"rename-swap", "sync-swap", "rename-deleted", "sync-deleted", "rename-final", "done"} {
		t.Run(step, func(t *testing.T) {
			c := newClock()
			fs := NewMemFS()
			l := openTestLog(t, fs, compactConfig(), OpenOptions{Now: c.Now})
			written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			before := readRecords(t, l)
			crash := errors.New("crash")
			var crashed *MemFS
			run := testRun(c, 1<<20)
			run.hook = func(s string) error {
				if s == step && crashed == nil {
					crashed = fs.CrashClone()
					return crash
				}
				return nil
			}
			st, err := l.clean(run, -1, true)
			if step != "done" && !errors.Is(err, crash) {
				t.Fatalf("clean: %v", err)
			}
			if crashed == nil {
				crashed = fs.CrashClone()
			}
			l2, err := Open(crashed, "/data", TopicPartition{Topic: "t", Partition: 0}, compactConfig(), testLogger(t),
				OpenOptions{Now: c.Now, RecoveryPoint: 200, HighWatermark: 200})
			if err != nil {
				t.Fatalf("reopen after a crash before %s: %v", step, err)
			}
			defer l2.Close()
			if l2.LogEndOffset() != 200 {
				t.Fatalf("log end %d after the crash, want 200", l2.LogEndOffset())
			}
			// Groups swapped before the crash are clean, the others not:
			// every record is one written at its offset, every key's
			// latest value is there, and so is everything after the
			// cleaned section.
			got := readRecords(t, l2)
			checkCompacted(t, got, written, 1<<62)
			_, _ = before, st
			// And it cleans again from there without trouble.
			if _, err := l2.clean(testRun(c, 1<<20), -1, true); err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, readRecords(t, l2), written, l2.mu.segs[len(l2.mu.segs)-1].base)
			names, _ := crashed.ReadDir("/data/t-0")
			for _, n := range names {
				for _, suf := range []string{swapSuffix, cleanedSuffix, deletedSuffix} {
					if len(n) > len(suf) && n[len(n)-len(suf):] == suf {
						t.Errorf("leftover %s after recovery", n)
					}
				}
			}
		})
	}
}

// TestCleanerReadersNeverSeeAGap reads the log from the start over and
// over while it is cleaned: every pass must find every key's latest
// value, offsets increasing, no torn batch.
func TestCleanerReadersNeverSeeAGap(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 600, 20, c.Now().UnixMilli())
	want := latest(written)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				got := latest(readRecords(t, l))
				for k, w := range want {
					if g, ok := got[k]; !ok || g.off != w.off {
						t.Errorf("reader missed key %s's latest record", k)
						return
					}
				}
			}
		}()
	}
	// A producer appends other keys meanwhile (rolling segments).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := l.Append(keyBatch(fmt.Sprintf("w%d", i%7), []byte("w"), c.Now().UnixMilli()), 0); err != nil {
				t.Error(err)
				return
			}
			l.SetHighWatermark(l.LogEndOffset())
		}
	}()
	run := testRun(c, 24*12) // small map: many passes, many swaps
	if _, err := l.clean(run, -1, true); err != nil {
		t.Error(err)
	}
	close(done)
	wg.Wait()
}

func TestCleanerAbandonsASwapAfterTruncation(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
	run := testRun(c, 1<<20)
	run.hook = func(s string) error {
		if s == "rename-swap" {
			// A truncation lands while the group is being cleaned.
			l.mu.Unlock()
			err := l.TruncateTo(150)
			l.mu.Lock()
			return err
		}
		return nil
	}
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Aborted {
		t.Fatal("swap went ahead after a truncation")
	}
	checkCompacted(t, readRecords(t, l), written[:150], 0)
}

func TestAppendAsFollowerAcceptsCompactedBatches(t *testing.T) {
	c := newClock()
	leader := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	fillLog(t, leader, 200, 10, c.Now().UnixMilli())
	if _, err := leader.clean(testRun(c, 1<<20), -1, true); err != nil {
		t.Fatal(err)
	}
	follower := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	for off := int64(0); off < leader.LogEndOffset(); {
		ri, err := leader.Read(off, 1<<20, leader.LogEndOffset(), true)
		if err != nil || len(ri.Records) == 0 {
			t.Fatalf("read %d: %v", off, err)
		}
		if _, err := follower.AppendAsFollower(ri.Records); err != nil {
			t.Fatalf("follower refused cleaned batches at %d: %v", off, err)
		}
		off = ri.NextOffset
	}
	a, b := readRecords(t, leader), readRecords(t, follower)
	sort.Slice(a, func(i, j int) bool { return a[i].off < a[j].off })
	if len(a) != len(b) {
		t.Fatalf("follower has %d records, leader %d", len(b), len(a))
	}
}

// producerState rebuilds idempotent producer state from the log's batch
// headers, as replication does when it loads a partition.
func producerState(t *testing.T, l *Log) *idempotent.State {
	t.Helper()
	st := idempotent.NewState()
	for _, v := range l.viewsLocked(0) {
		_, err := scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
			b := idempotent.Batch{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, FirstSeq: h.BaseSequence,
				LastSeq: h.BaseSequence + h.LastOffsetDelta, Transactional: h.IsTransactional(), Control: h.IsControl()}
			if h.ProducerID < 0 {
				b.ProducerID = idempotent.NoProducerID
			}
			if b.Control {
				raw := make([]byte, h.Size())
				_, _ = v.s.log.ReadAt(raw, pos)
				m, _ := ReadControlMarker(raw)
				b.Abort = !m.Commit
			}
			st.Update(b, h.BaseOffset, h.LastOffset())
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestCleanedLogRebuildsTheSameProducerState(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 0
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	ts := c.Now().UnixMilli() - 10_000
	// Three producers write transactions and idempotent batches over few
	// keys; every value is overwritten many times.
	seq := map[int64]int32{}
	for i := 0; i < 120; i++ {
		pid := int64(i%3 + 1)
		key := fmt.Sprintf("k%d", i%4)
		if i%2 == 0 {
			mustAppend(t, l, txnBatch(pid, seq[pid], key, fmt.Sprint(i), ts), 0)
			seq[pid]++
			mustAppend(t, l, ControlBatch(pid, 0, 0, i%4 != 0, ts), 0)
		} else {
			b := NewBatchBuilder(ts)
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq[pid]
			mustAppend(t, l, b.Add(Record{Key: []byte(key), Value: []byte(fmt.Sprint(i))}).Build(), 0)
			seq[pid]++
		}
	}
	fillLog(t, l, 60, 4, ts)
	want := producerState(t, l)
	run := testRun(c, 1<<20)
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	fillLog(t, l, 60, 4, c.Now().UnixMilli()-5000)
	if _, err := l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	got := producerState(t, l)
	if u := got.FirstUnstableOffset(l.HighWatermark()); u != -1 {
		t.Fatalf("a transaction is open at %d in the cleaned log", u)
	}
	for _, w := range want.Entries() {
		g := got.Entry(w.ProducerID)
		if g == nil {
			t.Fatalf("producer %d is gone from the cleaned log", w.ProducerID)
		}
		if g.Epoch != w.Epoch || len(g.Batches) == 0 || g.Batches[len(g.Batches)-1].LastSeq != w.Batches[len(w.Batches)-1].LastSeq {
			t.Fatalf("producer %d: %+v after cleaning, %+v before", w.ProducerID, g, w)
		}
	}
}

// A sendfile region of a segment the cleaner replaces keeps the old
// segment's bytes, whole, until it is sent.
func TestRegionOfACleanedSegmentStaysWhole(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 256 << 10
	l, err := Open(OSFS(), t.TempDir(), TopicPartition{Topic: "r", Partition: 0}, cfg, testLogger(t), OpenOptions{CleanShutdown: true, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	val := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < 600; i++ {
		mustAppend(t, l, keyBatch(fmt.Sprintf("k%d", i%5), val, c.Now().UnixMilli()), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	ri, err := l.ReadRegion(0, 128<<10, l.LogEndOffset(), true)
	if err != nil || ri.Region == nil {
		t.Fatalf("want a region, got %+v, %v", ri, err)
	}
	defer ri.Region.Close()
	if _, err := l.clean(testRun(c, 1<<20), -1, true); err != nil {
		t.Fatal(err)
	}
	if ri2, _ := l.Read(0, 128<<10, l.LogEndOffset(), true); int64(len(ri2.Records)) >= ri.Region.Len {
		t.Fatal("the segment was not replaced by a smaller one")
	}
	got := make([]byte, ri.Region.Len)
	if _, err := ri.Region.File.ReadAt(got, ri.Region.Pos); err != nil {
		t.Fatal(err)
	}
	hs, err := ValidateReplicatedBatches(got, math32)
	if err != nil || hs[0].BaseOffset != 0 || hs[len(hs)-1].NextOffset() != ri.NextOffset {
		t.Fatalf("region after cleaning: %v, batches %d..", err, len(hs))
	}
}

// A compacted topic's active segment rolls by max.compaction.lag.ms when
// that is shorter than segment.ms, so its records become cleanable within
// the lag (KIP-354).
func TestCompactedLogRollsByMaxCompactionLag(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 3_600_000
	cfg.MaxCompactionLagMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	ts := c.Now().UnixMilli()
	mustAppend(t, l, keyBatch("a", []byte("1"), ts), 0)
	mustAppend(t, l, keyBatch("a", []byte("2"), ts+30_000), 0)
	if l.NumSegments() != 1 {
		t.Fatal("rolled before max.compaction.lag.ms")
	}
	mustAppend(t, l, keyBatch("a", []byte("3"), ts+61_000), 0)
	if l.NumSegments() != 2 {
		t.Fatal("did not roll after max.compaction.lag.ms")
	}
	cfg.Compact = false
	l2 := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	mustAppend(t, l2, keyBatch("a", []byte("1"), ts), 0)
	mustAppend(t, l2, keyBatch("a", []byte("3"), ts+61_000), 0)
	if l2.NumSegments() != 1 {
		t.Fatal("a delete-policy log rolled by max.compaction.lag.ms")
	}
}

// A swap whose log was renamed but whose index was not (a crash between
// the renames) leaves the old segment's index under the new log's name:
// open must not trust it, and rebuilds the indexes.
func TestOpenRebuildsIndexesLeftBehindBySwap(t *testing.T) {
	c := newClock()
	fs := NewMemFS()
	cfg := compactConfig()
	l := openTestLog(t, fs, cfg, OpenOptions{Now: c.Now})
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := l.clean(testRun(c, 1<<20), -1, true)
	if err != nil {
		t.Fatal(err)
	}
	// A second cleaning merges the cleaned segments into the first.
	written = append(written, fillLog(t, l, 30, 10, c.Now().UnixMilli())...)
	if _, err := l.clean(testRun(c, 1<<20), st.End, true); err != nil {
		t.Fatal(err)
	}
	// An index that passes the sanity checks but is not this file's: an
	// early offset pointing at the segment's last batch.
	data := readFileBytes(t, fs, "/data/t-0/"+segmentName(0)+logSuffix)
	var lastPos int64
	_, _ = scanHeaders(bytes.NewReader(data), 0, int64(len(data)), func(h BatchHeader, pos int64) bool {
		lastPos = pos
		return true
	})
	stale := putOffsetEntry(nil, 2, uint32(lastPos))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The new index is still a .swap, the old one in its place.
	stem := "/data/t-0/" + segmentName(0)
	if err := fs.Rename(stem+indexSuffix, stem+indexSuffix+swapSuffix); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.OpenFile(stem+indexSuffix, os.O_CREATE|os.O_WRONLY, 0o644)
	_, _ = f.Write(stale)
	_ = f.Sync()
	_ = f.Close()
	_ = fs.SyncDir("/data/t-0")
	l2 := openTestLog(t, fs, cfg, OpenOptions{Now: c.Now, CleanShutdown: true})
	checkCompacted(t, readRecords(t, l2), written, l2.mu.segs[len(l2.mu.segs)-1].base)
	var hs []BatchHeader
	_, _ = scanHeaders(bytes.NewReader(data), 0, int64(len(data)), func(h BatchHeader, _ int64) bool {
		hs = append(hs, h)
		return true
	})
	for off := int64(0); off < hs[len(hs)-1].LastOffset(); off++ {
		ri, err := l2.Read(off, 1, 230, true)
		if err != nil || len(ri.Records) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		want := hs[sort.Search(len(hs), func(i int) bool { return hs[i].LastOffset() >= off })]
		if h := parseHeaderUnchecked(ri.Records); h.BaseOffset != want.BaseOffset {
			t.Fatalf("read at %d returned the batch at %d, want %d: stale index", off, h.BaseOffset, want.BaseOffset)
		}
	}
	if ok, _, _ := fs.Stat(stem + indexSuffix + swapSuffix); ok {
		t.Fatal("index swap file left behind")
	}
}

// An old tombstone (its timestamp long past delete.retention.ms) still
// stays delete.retention.ms after the cleaning that first reached it
// (KIP-534's delete horizon), and keeps its timestamp.
func TestTombstoneHorizonCountsFromItsFirstCleaning(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	old := c.Now().UnixMilli() - 10*86_400_000
	fillLog(t, l, 100, 10, old)
	b := NewBatchBuilder(old)
	b.Add(Record{Key: []byte("k3"), Value: nil, TimestampDelta: 5})
	b.Add(Record{Key: []byte("other"), Value: []byte("v"), TimestampDelta: 7})
	mustAppend(t, l, b.Build(), 0)
	fillLog(t, l, 40, 3, old)
	run := testRun(c, 1<<20)
	tombstone := func() (kv, BatchHeader, bool) {
		for _, v := range l.viewsLocked(0) {
			var found kv
			var fh BatchHeader
			ok := false
			_, _ = scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
				raw := make([]byte, h.Size())
				_, _ = v.s.log.ReadAt(raw, pos)
				_ = eachRecord(h, raw, math32, func(o, ts int64, body []byte) {
					if r, _ := recordOf(body); string(r.Key) == "k3" && r.Value == nil {
						found, fh, ok = kv{off: o, key: "k3", value: []byte(fmt.Sprint(ts))}, h, true
					}
				})
				return true
			})
			if ok {
				return found, fh, true
			}
		}
		return kv{}, BatchHeader{}, false
	}
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	tomb, h, ok := tombstone()
	if !ok {
		t.Fatal("tombstone dropped by its first cleaning")
	}
	if h.Attributes&attrDeleteHorizon == 0 || h.FirstTimestamp != c.Now().UnixMilli()+60_000 {
		t.Fatalf("tombstone's batch has no delete horizon: %+v", h)
	}
	if string(tomb.value) != fmt.Sprint(old+5) {
		t.Fatalf("tombstone's timestamp is %s, was %d", tomb.value, old+5)
	}
	c.Advance(59 * time.Second)
	fillLog(t, l, 30, 3, old)
	if st, err = l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := tombstone(); !ok {
		t.Fatal("tombstone dropped before delete.retention.ms since its first cleaning")
	}
	c.Advance(2 * time.Second)
	fillLog(t, l, 30, 3, old)
	if _, err = l.clean(run, st.End, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := tombstone(); ok {
		t.Fatal("tombstone kept past its delete horizon")
	}
	for _, r := range readRecords(t, l) {
		if r.key == "other" && string(r.value) != "v" {
			t.Fatal("the tombstone's batch-mate changed")
		}
	}
}

// Corrupt record framing inside a batch is an error for the cleaning,
// never a panic.
func TestCleanerSurvivesCorruptRecords(t *testing.T) {
	h := BatchHeader{BaseOffset: 0, LastOffsetDelta: 1, FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for _, recs := range [][]byte{{0}, {2}, {2, 0}, {0x7f}, {4, 0, 0x80}} {
		if _, err := rebuildBatchWithHorizon(h, recs, 1, 1, 5); err == nil {
			t.Errorf("records %x accepted", recs)
		}
		_ = eachPlainRecord(BatchHeader{NumRecords: 3}, recs, func(int64, int64, []byte) {})
		_, _, _, _ = recordKey(recs)
	}
}

// Retention deleting segments a cleaning is reading (compact,delete)
// abandons the cleaning; it is not an error of the log.
func TestRetentionDuringCleaningAbandonsIt(t *testing.T) {
	c := newClock()
	cfg := compactConfig()
	cfg.RetentionMs = 60_000
	l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli()-120_000)
	fillLog(t, l, 100, 10, c.Now().UnixMilli())
	run := testRun(c, 1<<20)
	once := false
	// The throttle's sleep runs between two batch reads.
	run.throttle = &throttler{rate: 1, start: time.Now(), sleep: func(time.Duration) {
		if !once {
			once = true
			if n, err := l.ApplyRetention(c.Now()); err != nil || n == 0 {
				t.Errorf("retention deleted %d segments: %v", n, err)
			}
		}
	}}
	st, err := l.clean(run, -1, true)
	if err != nil {
		t.Fatalf("cleaning failed instead of stopping: %v", err)
	}
	if !st.Aborted {
		t.Fatal("cleaning went on over deleted segments")
	}
	_ = written
	if _, err := l.clean(testRun(c, 1<<20), -1, true); err != nil {
		t.Fatal(err)
	}
}

// A failing write, sync or rename at any point of a cleaning leaves a log
// that reads whole, and that reopens whole, both as the files are and
// as a crash right then would leave them.
func TestCleanerFailingFilesystemLeavesAWholeLog(t *testing.T) {
	for _, tc := range []struct{ op, suffix string }{
		{"write", cleanedSuffix}, {"sync", cleanedSuffix}, {"rename", cleanedSuffix},
		{"syncdir", ""}, {"rename", indexSuffix}, {"rename", logSuffix}, {"rename", swapSuffix}, {"remove", deletedSuffix},
	} {
		t.Run(tc.op+tc.suffix, func(t *testing.T) {
			c := newClock()
			mem := NewMemFS()
			armed, fired := false, false
			fs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
				// The second group: some groups swap in before it fails.
				if armed && !fired && op == tc.op && strings.HasSuffix(name, tc.suffix) && !strings.Contains(name, segmentName(0)) {
					fired = true
					return errors.New("injected " + op + " failure")
				}
				return nil
			}}
			l := openTestLog(t, fs, compactConfig(), OpenOptions{Now: c.Now})
			written := fillLog(t, l, 200, 10, c.Now().UnixMilli())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			armed = true
			_, err := l.clean(testRun(c, 1<<20), -1, true)
			armed = false
			if !fired {
				t.Fatalf("no %s of a %s file during cleaning", tc.op, tc.suffix)
			}
			if err == nil && tc.op != "remove" {
				t.Fatal("cleaning reported no error")
			}
			checkCompacted(t, readRecords(t, l), written, 1<<62)
			crashed := mem.CrashClone()
			for name, fsys := range map[string]FS{"crash": crashed, "as is": mem} {
				if name == "as is" {
					l.Close()
				}
				l2, err := Open(fsys, "/data", TopicPartition{Topic: "t", Partition: 0}, compactConfig(), testLogger(t),
					OpenOptions{Now: c.Now, RecoveryPoint: 200, HighWatermark: 200})
				if err != nil {
					t.Fatalf("%s: reopen: %v", name, err)
				}
				if l2.LogEndOffset() != 200 {
					t.Fatalf("%s: log end %d", name, l2.LogEndOffset())
				}
				checkCompacted(t, readRecords(t, l2), written, 1<<62)
				l2.Close()
			}
		})
	}
}

// With min.compaction.lag.ms at 0 (the default) record timestamps do not
// matter: records from a client whose clock runs ahead are cleaned too.
func TestCleanerIgnoresTimestampsWithoutMinCompactionLag(t *testing.T) {
	c := newClock()
	l := openTestLog(t, NewMemFS(), compactConfig(), OpenOptions{Now: c.Now})
	written := fillLog(t, l, 200, 10, c.Now().UnixMilli()+3_600_000)
	st, err := l.clean(testRun(c, 1<<20), -1, false)
	if err != nil || st.End == 0 {
		t.Fatalf("records stamped in the future not cleaned: %+v %v", st, err)
	}
	checkCompacted(t, readRecords(t, l), written, st.End)
}

// TestCleanerRandomHistories runs random histories (updates, deletes,
// batches of several records, gzip or not, key maps of random size,
// cleanings at random moments) against a model: after each cleaning
// every record read is one written at its offset, every key's latest
// record (value or unexpired tombstone) is there, and a key appears at
// most once below the cleaned point.
func TestCleanerRandomHistories(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			c := newClock()
			cfg := compactConfig()
			cfg.SegmentBytes = int64(600 + rnd.Intn(2000))
			cfg.DeleteRetentionMs = int64(rnd.Intn(3)) * 1000
			fs := NewMemFS()
			l := openTestLog(t, fs, cfg, OpenOptions{Now: c.Now})
			keys := 5 + rnd.Intn(40)
			var written []kv
			run := testRun(c, int64(24*(6+rnd.Intn(keys*2))))
			cp := int64(-1)
			for step := 0; step < 30; step++ {
				for b := rnd.Intn(20); b > 0; b-- {
					bb := NewBatchBuilder(c.Now().UnixMilli() - 5000)
					n := 1 + rnd.Intn(4)
					var recs []kv
					for i := 0; i < n; i++ {
						k := fmt.Sprintf("k%d", rnd.Intn(keys))
						var v []byte
						if rnd.Intn(5) > 0 {
							v = []byte(fmt.Sprintf("v%d-%d", step, rnd.Int()))
						}
						bb.Add(Record{Key: []byte(k), Value: v, TimestampDelta: int64(i)})
						recs = append(recs, kv{key: k, value: v})
					}
					raw := bb.Build()
					if rnd.Intn(3) == 0 {
						h := parseHeaderUnchecked(raw)
						h.Attributes = int16(CompressionGzip)
						h.PartitionLeaderEpoch = -1
						var err error
						if raw, err = rebuildBatch(h, raw[BatchHeaderSize:], h.NumRecords, h.MaxTimestamp); err != nil {
							t.Fatal(err)
						}
					}
					info := mustAppend(t, l, raw, 0)
					for i := range recs {
						recs[i].off = info.FirstOffset + int64(i)
					}
					written = append(written, recs...)
				}
				l.SetHighWatermark(l.LogEndOffset())
				c.Advance(time.Duration(rnd.Intn(1500)) * time.Millisecond)
				if rnd.Intn(2) == 0 {
					continue
				}
				st, err := l.clean(run, cp, rnd.Intn(2) == 0)
				if err != nil {
					t.Fatal(err)
				}
				if st.Passes > 0 {
					cp = st.End
				}
				got := readRecords(t, l)
				byOff := map[int64]kv{}
				for _, w := range written {
					byOff[w.off] = w
				}
				seen := map[string]bool{}
				gotLatest := map[string]int64{}
				for _, g := range got {
					w, ok := byOff[g.off]
					if !ok || w.key != g.key || !bytes.Equal(w.value, g.value) {
						t.Fatalf("step %d: record at %d is %q=%q, written %q=%q", step, g.off, g.key, g.value, w.key, w.value)
					}
					if g.off < cp {
						if seen[g.key] {
							t.Fatalf("step %d: key %s twice below %d", step, g.key, cp)
						}
						seen[g.key] = true
					}
					gotLatest[g.key] = g.off
				}
				for k, w := range latest(written) {
					if w.value == nil {
						continue // a tombstone may have expired
					}
					if gotLatest[k] != w.off {
						t.Fatalf("step %d: key %s latest at %d, want %d", step, k, gotLatest[k], w.off)
					}
				}
			}
			// And the log reopens from a crash as it is.
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			l2, err := Open(fs.CrashClone(), "/data", TopicPartition{Topic: "t", Partition: 0}, cfg, testLogger(t), OpenOptions{Now: c.Now, HighWatermark: l.LogEndOffset()})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if a, b := len(readRecords(t, l)), len(readRecords(t, l2)); a != b {
				t.Fatalf("%d records before the crash, %d after", a, b)
			}
		})
	}
}

// TestCleanerRandomTransactions interleaves committed, aborted and still
// open transactions of several producers with plain writes: each
// cleaning stops before the first open transaction, leaves no aborted
// record below the cleaned point and every key's latest committed record,
// and the producer state rebuilt from the log has the same open
// transactions and every producer's last sequence.
func TestCleanerRandomTransactions(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			c := newClock()
			cfg := compactConfig()
			cfg.SegmentBytes = int64(600 + rnd.Intn(1500))
			cfg.DeleteRetentionMs = 1000
			l := openTestLog(t, NewMemFS(), cfg, OpenOptions{Now: c.Now})
			const keys, producers = 12, 3
			type rec struct {
				kv
				pid     int64
				aborted bool
				open    bool
			}
			var written []rec
			seq := map[int64]int32{}
			run := testRun(c, 1<<16)
			cp := int64(-1)
			ts := c.Now().UnixMilli() - 5000
			open := map[int64][]rec{} // each producer's open transaction
			for step := 0; step < 25; step++ {
				for i := rnd.Intn(12); i > 0; i-- {
					pid := int64(1 + rnd.Intn(producers))
					switch a := rnd.Intn(4); {
					case a < 2: // a record in pid's transaction
						k := fmt.Sprintf("k%d", rnd.Intn(keys))
						v := fmt.Sprintf("p%d-%d", pid, rnd.Int())
						info := mustAppend(t, l, txnBatch(pid, seq[pid], k, v, ts), 0)
						seq[pid]++
						open[pid] = append(open[pid], rec{kv: kv{off: info.FirstOffset, key: k, value: []byte(v)}, pid: pid})
					case a == 2 && len(open[pid]) > 0: // its end
						commit := rnd.Intn(3) > 0
						mustAppend(t, l, ControlBatch(pid, 0, 0, commit, ts), 0)
						for _, r := range open[pid] {
							r.aborted = !commit
							written = append(written, r)
						}
						delete(open, pid)
					default:
						k := fmt.Sprintf("k%d", rnd.Intn(keys))
						info := mustAppend(t, l, keyBatch(k, []byte("plain"), ts), 0)
						written = append(written, rec{kv: kv{off: info.FirstOffset, key: k, value: []byte("plain")}, pid: -1})
					}
				}
				firstOpen := int64(-1)
				for _, rs := range open {
					if firstOpen < 0 || rs[0].off < firstOpen {
						firstOpen = rs[0].off
					}
				}
				l.SetHighWatermark(l.LogEndOffset())
				c.Advance(time.Duration(rnd.Intn(800)) * time.Millisecond)
				st, err := l.clean(run, cp, true)
				if err != nil {
					t.Fatal(err)
				}
				if st.Passes > 0 {
					cp = st.End
				}
				if firstOpen >= 0 && cp > firstOpen {
					t.Fatalf("step %d: cleaned to %d past the open transaction at %d", step, cp, firstOpen)
				}
				byOff := map[int64]rec{}
				want := map[string]int64{}
				for _, rs := range open {
					for _, r := range rs {
						r.open = true
						byOff[r.off] = r
					}
				}
				for _, w := range written {
					byOff[w.off] = w
					if cur, ok := want[w.key]; !w.aborted && (!ok || w.off > cur) {
						want[w.key] = w.off
					}
				}
				got := map[string]int64{}
				for _, g := range readRecords(t, l) {
					w := byOff[g.off]
					if w.key != g.key || !bytes.Equal(w.value, g.value) {
						t.Fatalf("step %d: record at %d is not what was written", step, g.off)
					}
					if w.aborted && g.off < cp {
						t.Fatalf("step %d: aborted record at %d below the cleaned point %d", step, g.off, cp)
					}
					if cur, ok := got[g.key]; !w.aborted && !w.open && (!ok || g.off > cur) {
						got[g.key] = g.off
					}
				}
				for k, off := range want {
					if g, ok := got[k]; !ok || g != off {
						t.Fatalf("step %d: key %s latest committed at %d, read %d", step, k, off, got[k])
					}
				}
				ps := producerState(t, l)
				if u := ps.FirstUnstableOffset(l.HighWatermark()); u != firstOpen {
					t.Fatalf("step %d: first unstable offset %d in the rebuilt producer state, want %d", step, u, firstOpen)
				}
				for pid, next := range seq {
					e := ps.Entry(pid)
					if e == nil || len(e.Batches) == 0 || e.Batches[len(e.Batches)-1].LastSeq != next-1 {
						t.Fatalf("step %d: producer %d's state lost its last sequence %d: %+v", step, pid, next-1, e)
					}
				}
			}
		})
	}
}

// Every codec's rebuilt batch decodes back to the records it was given,
// from several goroutines at once (the cleaner threads share encoders).
func TestRebuildBatchEveryCodec(t *testing.T) {
	b := NewBatchBuilder(1000)
	for i := 0; i < 50; i++ {
		b.Add(Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("v"), TimestampDelta: int64(i)})
	}
	raw := b.Build()
	h := parseHeaderUnchecked(raw)
	var wg sync.WaitGroup
	for _, codec := range []int8{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hc := h
				hc.Attributes = int16(codec)
				out, err := rebuildBatch(hc, raw[BatchHeaderSize:], h.NumRecords, h.MaxTimestamp)
				if err != nil {
					t.Errorf("codec %d: %v", codec, err)
					return
				}
				oh := parseHeaderUnchecked(out)
				n := 0
				if err := eachRecord(oh, out, math32, func(off, _ int64, body []byte) {
					key, _, _, _ := recordKey(body)
					if want := fmt.Sprintf("k%d", off); string(key) != want {
						t.Errorf("codec %d: record at %d has key %q, want %q", codec, off, key, want)
					}
					n++
				}); err != nil || n != 50 {
					t.Errorf("codec %d: %d records, err %v", codec, n, err)
				}
			}()
		}
	}
	wg.Wait()
}

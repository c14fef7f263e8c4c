package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
)

func smallConfig() Config {
	c := DefaultConfig()
	c.IndexIntervalBytes = 1 // an index entry for (almost) every batch
	return c
}

func TestAppendAndRead(t *testing.T) {
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	var sizes []int
	for i := 0; i < 10; i++ {
		b := testkit.SimpleBatch(3, 1000+int64(i)*10, 20)
		sizes = append(sizes, len(b))
		info := mustAppend(t, l, b, 0)
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) || info.NumRecords != 3 {
			t.Fatalf("append %d: %+v", i, info)
		}
		// Offsets were assigned in the caller's buffer.
		if h, _ := ParseBatchHeader(b); h.BaseOffset != int64(i*3) || h.PartitionLeaderEpoch != 0 {
			t.Fatalf("batch %d header not rewritten: %+v", i, h)
		}
	}
	if l.LogEndOffset() != 30 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	l.SetHighWatermark(30)

	// Offset in the middle of a batch returns that whole batch first.
	ri, err := l.Read(4, 1<<20, 30, false)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ValidateBatches(ri.Records, math32)
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].BaseOffset != 3 || len(hs) != 9 {
		t.Fatalf("read 4: first base %d, %d batches", hs[0].BaseOffset, len(hs))
	}
	// maxBytes: exactly two batches fit.
	ri, _ = l.Read(0, int32(sizes[0]+sizes[1]+sizes[2]-1), 30, false)
	if hs, _ := ValidateBatches(ri.Records, math32); len(hs) != 2 {
		t.Fatalf("maxBytes: %d batches", len(hs))
	}
	// A batch larger than maxBytes: nothing unless minOneBatch.
	ri, _ = l.Read(0, 10, 30, false)
	if len(ri.Records) != 0 {
		t.Fatalf("expected nothing, got %d bytes", len(ri.Records))
	}
	ri, _ = l.Read(0, 10, 30, true)
	if hs, err := ValidateBatches(ri.Records, math32); err != nil || len(hs) != 1 {
		t.Fatalf("minOneBatch: %v %d", err, len(hs))
	}
	// maxOffset cut: a batch whose base is >= maxOffset is not returned.
	ri, _ = l.Read(0, 1<<20, 7, false)
	if hs, _ := ValidateBatches(ri.Records, math32); len(hs) != 3 || hs[2].BaseOffset != 6 {
		t.Fatalf("maxOffset 7: %d batches", len(hs))
	}
	ri, _ = l.Read(6, 1<<20, 6, true)
	if len(ri.Records) != 0 {
		t.Fatal("read at maxOffset returned data")
	}
	// LEO: empty; beyond: out of range.
	ri, err = l.Read(30, 1<<20, 30, true)
	if err != nil || len(ri.Records) != 0 || ri.LogEndOffset != 30 || ri.HighWatermark != 30 {
		t.Fatalf("read at LEO: %v %+v", err, ri)
	}
	if _, err := l.Read(31, 1<<20, 31, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 1<<20, 31, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
}

func TestRollBySegmentBytes(t *testing.T) {
	fs := NewMemFS()
	cfg := smallConfig()
	b := testkit.SimpleBatch(2, 1000, 100)
	cfg.SegmentBytes = int64(len(b))*3 + 1 // three batches per segment
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, 1000, 100), 0)
	}
	if n := l.NumSegments(); n != 4 {
		t.Fatalf("segments %d, want 4", n)
	}
	names, _ := fs.ReadDir(l.Dir())
	want := map[string]bool{}
	for _, base := range []int64{0, 6, 12, 18} {
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			want[fmt.Sprintf("%020d%s", base, suf)] = true
		}
	}
	for _, n := range names {
		delete(want, n)
	}
	if len(want) != 0 {
		t.Fatalf("missing files %v in %v", want, names)
	}
	l.SetHighWatermark(20)
	if hs := readAll(t, l, 0, 20); len(hs) != 10 {
		t.Fatalf("read %d batches across segments", len(hs))
	}
	// Too large for any segment.
	big := testkit.SimpleBatch(1, 1, int(cfg.SegmentBytes))
	if _, err := l.Append(big, 0); !errors.Is(err, ErrRecordListTooLarge) {
		t.Fatalf("oversized append: %v", err)
	}
	l.Close()
}

func TestRollBySegmentMs(t *testing.T) {
	fs := NewMemFS()
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentMs = 1000
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true, Now: clk.Now})
	defer l.Close()
	mustAppend(t, l, testkit.SimpleBatch(1, 10_000, 10), 0)
	mustAppend(t, l, testkit.SimpleBatch(1, 10_900, 10), 0) // 900ms after the first: same segment
	if n := l.NumSegments(); n != 1 {
		t.Fatalf("segments %d", n)
	}
	mustAppend(t, l, testkit.SimpleBatch(1, 11_001, 10), 0) // > segment.ms after the first batch
	if n := l.NumSegments(); n != 2 {
		t.Fatalf("segments %d after segment.ms", n)
	}
}

func TestRetention(t *testing.T) {
	fs := NewMemFS()
	clk := newClock()
	cfg := smallConfig()
	one := testkit.SimpleBatch(2, 0, 100)
	cfg.SegmentBytes = int64(len(one)) * 2 // two batches per segment
	cfg.RetentionMs = 1000
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true, Now: clk.Now})
	defer l.Close()
	now := clk.Now().UnixMilli()
	// Segments: [0,4) old, [4,8) old, [8,12) new, [12,14) active.
	for i, ts := range []int64{now - 5000, now - 5000, now - 4000, now - 4000, now, now, now, now} {
		_ = i
		mustAppend(t, l, testkit.SimpleBatch(2, ts, 100), 0)
	}
	if l.NumSegments() != 4 {
		t.Fatalf("segments %d", l.NumSegments())
	}
	// Nothing is deleted above the HW.
	if n, err := l.ApplyRetention(clk.Now()); err != nil || n != 0 {
		t.Fatalf("retention below HW deleted %d (%v)", n, err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	n, err := l.ApplyRetention(clk.Now())
	if err != nil || n != 2 {
		t.Fatalf("retention.ms deleted %d segments (%v)", n, err)
	}
	if l.LogStartOffset() != 8 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if _, err := l.Read(4, 100, 16, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read deleted offset: %v", err)
	}
	if ok, _, _ := fs.Stat(filepath.Join(l.Dir(), segmentName(0)+".log")); ok {
		t.Fatal("segment file still present")
	}
	// Everything expires: the active segment stays.
	clk.Advance(time.Hour)
	n, _ = l.ApplyRetention(clk.Now())
	if n != 1 || l.NumSegments() != 1 || l.LogStartOffset() != 12 {
		t.Fatalf("deleted %d, segments %d, start %d", n, l.NumSegments(), l.LogStartOffset())
	}

	// retention.bytes
	cfg.RetentionMs = -1
	cfg.RetentionBytes = int64(len(one)) * 3
	l.UpdateConfig(cfg)
	for i := 0; i < 8; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, now, 100), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.ApplyRetention(clk.Now()); err != nil {
		t.Fatal(err)
	}
	// Kafka's rule: delete oldest segments while the rest still holds at
	// least retention.bytes; so less than one segment above the limit stays.
	if s := l.Size(); s-int64(len(one))*2 >= cfg.RetentionBytes {
		t.Fatalf("size %d too far above retention.bytes %d", s, cfg.RetentionBytes)
	}
	if l.NumSegments() < 1 || l.LogStartOffset() <= 12 {
		t.Fatalf("segments %d start %d", l.NumSegments(), l.LogStartOffset())
	}
	hs := readAll(t, l, l.LogStartOffset(), l.LogEndOffset())
	if len(hs) == 0 || hs[len(hs)-1].NextOffset() != l.LogEndOffset() {
		t.Fatal("remaining data unreadable")
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	fs := NewMemFS()
	cfg := smallConfig()
	one := testkit.SimpleBatch(2, 0, 100)
	cfg.SegmentBytes = int64(len(one)) * 2
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
	defer l.Close()
	for i := 0; i < 6; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, 1, 100), int32(i))
	}
	// Segments [0,4) [4,8) [8,12); HW 9.
	l.SetHighWatermark(9)
	if _, err := l.DeleteRecordsBefore(10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond HW: %v", err)
	}
	ls, err := l.DeleteRecordsBefore(5)
	if err != nil || ls != 5 {
		t.Fatalf("start %d %v", ls, err)
	}
	if l.NumSegments() != 2 {
		t.Fatalf("segments %d", l.NumSegments())
	}
	if _, err := l.Read(4, 1000, 9, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// Reading at 5 returns the batch [4,5] containing it (Kafka does too).
	ri, err := l.Read(5, 1000, 9, true)
	if err != nil || len(ri.Records) == 0 {
		t.Fatal(err)
	}
	if off, _, _, _, _ := l.OffsetForTimestamp(-2); off != 5 {
		t.Fatalf("earliest %d", off)
	}
	if ep := l.EpochForOffset(5); ep != 2 {
		t.Fatalf("epoch at 5: %d", ep)
	}
	if ls, _ := l.DeleteRecordsBefore(-1); ls != 9 {
		t.Fatalf("delete to HW: %d", ls)
	}
}

func TestTruncateToThenAppend(t *testing.T) {
	fs := NewMemFS()
	cfg := smallConfig()
	one := testkit.SimpleBatch(3, 0, 50)
	cfg.SegmentBytes = int64(len(one)) * 4
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testkit.SimpleBatch(3, int64(100+i), 50), int32(i/4))
	}
	// 30 offsets, epochs: 0@0, 1@12, 2@24. Segments of 4 batches: 0,12,24.
	l.SetHighWatermark(30)
	if err := l.TruncateTo(14); err != nil { // inside batch [12,14]
		t.Fatal(err)
	}
	if l.LogEndOffset() != 12 || l.HighWatermark() != 12 {
		t.Fatalf("LEO %d HW %d", l.LogEndOffset(), l.HighWatermark())
	}
	if l.LatestEpoch() != 0 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	if ep, end := l.EndOffsetForEpoch(0); ep != 0 || end != 12 {
		t.Fatalf("end for epoch 0: %d %d", ep, end)
	}
	for i := 0; i < 5; i++ {
		info := mustAppend(t, l, testkit.SimpleBatch(3, int64(200+i), 50), 5)
		if info.FirstOffset != int64(12+3*i) {
			t.Fatalf("append after truncate at %d", info.FirstOffset)
		}
	}
	check := func(l *Log) {
		t.Helper()
		l.SetHighWatermark(l.LogEndOffset())
		for off := int64(0); off < 27; off++ {
			ri, err := l.Read(off, 1, 27, true)
			if err != nil {
				t.Fatal(err)
			}
			hs, err := ValidateBatches(ri.Records, math32)
			if err != nil || hs[0].BaseOffset > off || hs[0].LastOffset() < off {
				t.Fatalf("offset %d: %v %+v", off, err, hs)
			}
		}
		// Batch at 12 has timestamps 200,201,202: the record at 13 is first >= 201.
		if off, ts, _, ok, _ := l.OffsetForTimestamp(201); !ok || off != 13 || ts != 201 {
			t.Fatalf("timestamp lookup after truncate: %d %d %v", off, ts, ok)
		}
	}
	check(l)
	if ep, end := l.EndOffsetForEpoch(0); ep != 0 || end != 12 {
		t.Fatalf("end for epoch 0: %d %d", ep, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen (clean): indexes must pass their sanity check and agree.
	l = openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true, HighWatermark: 27})
	defer l.Close()
	if l.LogEndOffset() != 27 {
		t.Fatalf("reopen LEO %d", l.LogEndOffset())
	}
	check(l)
	if got := l.EpochEntries(); fmt.Sprint(got) != "[[0 0] [5 12]]" {
		t.Fatalf("epochs after reopen %v", got)
	}

	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.LatestEpoch() != -1 {
		t.Fatal("truncate fully")
	}
	if info := mustAppend(t, l, testkit.SimpleBatch(1, 1, 1), 7); info.FirstOffset != 100 {
		t.Fatalf("append after full truncation at %d", info.FirstOffset)
	}
}

func TestEpochCache(t *testing.T) {
	var c epochCache
	c.assign(1, 0)
	c.assign(1, 5) // same epoch, later start: no-op
	c.assign(3, 10)
	c.assign(5, 20)
	if fmt.Sprint(c.entries) != "[{1 0} {3 10} {5 20}]" {
		t.Fatalf("%v", c.entries)
	}
	cases := []struct {
		req     int32
		ep      int32
		end     int64
		comment string
	}{
		{5, 5, 30, "latest epoch: LEO"},
		{3, 3, 20, "start of next epoch"},
		{4, 3, 20, "unknown epoch between: floor epoch, next start"},
		{0, 0, 0, "below earliest: requested epoch, first start"},
		{6, -1, -1, "above latest"},
		{-1, -1, -1, "undefined"},
	}
	for _, tc := range cases {
		ep, end := c.endOffsetFor(tc.req, 30)
		if ep != tc.ep || end != tc.end {
			t.Errorf("%s: endOffsetFor(%d) = %d,%d want %d,%d", tc.comment, tc.req, ep, end, tc.ep, tc.end)
		}
	}
	// A new epoch starting below existing entries replaces them.
	c.assign(4, 15)
	if fmt.Sprint(c.entries) != "[{1 0} {3 10} {4 15}]" {
		t.Fatalf("%v", c.entries)
	}
	c.truncateFromStart(12)
	if fmt.Sprint(c.entries) != "[{3 12} {4 15}]" {
		t.Fatalf("truncateFromStart %v", c.entries)
	}
	c.truncateFromEnd(15)
	if fmt.Sprint(c.entries) != "[{3 12}]" {
		t.Fatalf("truncateFromEnd %v", c.entries)
	}
	if c.epochForOffset(11) != -1 || c.epochForOffset(100) != 3 {
		t.Fatal("epochForOffset")
	}

	// Through the log, persisted in Kafka's format.
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 0)
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 0)
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 3)
	if ep, end := l.EndOffsetForEpoch(0); ep != 0 || end != 4 {
		t.Fatalf("%d %d", ep, end)
	}
	if ep, end := l.EndOffsetForEpoch(2); ep != 0 || end != 4 {
		t.Fatalf("%d %d", ep, end)
	}
	if ep, end := l.EndOffsetForEpoch(3); ep != 3 || end != 6 {
		t.Fatalf("%d %d", ep, end)
	}
	l.Close()
	if got := string(readFileBytes(t, fs, "/data/t-0/leader-epoch-checkpoint")); got != "0\n2\n0 0\n3 4\n" {
		t.Fatalf("checkpoint %q", got)
	}

	// Follower appends carry their epochs.
	fs2 := NewMemFS()
	f := openTestLog(t, fs2, smallConfig(), OpenOptions{CleanShutdown: true})
	defer f.Close()
	b := testkit.SimpleBatch(2, 1, 1)
	setBaseOffsetAndEpoch(b, 0, 4)
	b2 := testkit.SimpleBatch(2, 1, 1)
	setBaseOffsetAndEpoch(b2, 2, 6)
	if _, err := f.AppendAsFollower(append(b, b2...)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.EpochEntries()) != "[[4 0] [6 2]]" {
		t.Fatalf("follower epochs %v", f.EpochEntries())
	}
	if _, err := f.AppendAsFollower(b2); !errors.Is(err, ErrOffsetsOutOfOrder) {
		t.Fatalf("follower append below LEO: %v", err)
	}
}

func TestLogAppendTime(t *testing.T) {
	fs := NewMemFS()
	clk := newClock()
	cfg := smallConfig()
	cfg.LogAppendTime = true
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true, Now: clk.Now})
	defer l.Close()
	b := testkit.Batch{FirstTimestamp: 5, TimestampDeltas: []int64{0, 1, 2}, ValueLen: 10, Codec: CompressionGzip}.Encode(t)
	orig, _ := ParseBatchHeader(b)
	info := mustAppend(t, l, b, 0)
	now := clk.Now().UnixMilli()
	if info.LogAppendTime != now || info.MaxTimestamp != now {
		t.Fatalf("info %+v", info)
	}
	l.SetHighWatermark(3)
	ri, _ := l.Read(0, 1<<20, 3, true)
	hs, err := ValidateBatches(ri.Records, math32)
	if err != nil {
		t.Fatalf("CRC not valid after LogAppendTime rewrite: %v", err)
	}
	h := hs[0]
	if h.TimestampType() != 1 || h.MaxTimestamp != now || h.FirstTimestamp != orig.FirstTimestamp || h.CRC == orig.CRC {
		t.Fatalf("header %+v", h)
	}
	if off, ts, _, ok, _ := l.OffsetForTimestamp(now); !ok || off != 0 || ts != now {
		t.Fatalf("lookup %d %d %v", off, ts, ok)
	}
}

func TestConcurrentAppendReadFlush(t *testing.T) {
	fs := NewMemFS()
	cfg := smallConfig()
	cfg.FlushMessages = 1 // every append waits for an fsync: group commit
	cfg.SegmentBytes = 64 << 10
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				b := testkit.SimpleBatch(4, 1, 100)
				info, err := l.Append(b, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if rp := l.RecoveryPoint(); rp <= info.LastOffset {
					t.Errorf("append acknowledged before flush: rp %d last %d", rp, info.LastOffset)
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			leo := l.LogEndOffset()
			if leo == 0 {
				continue
			}
			ri, err := l.Read(leo/2, 4096, leo, true)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := ValidateBatches(ri.Records, math32); err != nil {
				t.Error(err)
				return
			}
			_, _, _, _, _ = l.OffsetForTimestamp(2)
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	if l.LogEndOffset() != 8*50*4 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	l.SetHighWatermark(l.LogEndOffset())
	hs := readAll(t, l, 0, l.LogEndOffset())
	for i, h := range hs {
		if h.BaseOffset != int64(i*4) {
			t.Fatalf("batch %d base %d", i, h.BaseOffset)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testkit.SimpleBatch(1, 1, 1), 0); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestFlushIfDue(t *testing.T) {
	fs := NewMemFS()
	clk := newClock()
	cfg := smallConfig()
	cfg.FlushMs = 1000
	l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true, Now: clk.Now})
	defer l.Close()
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 0)
	if err := l.FlushIfDue(clk.Now()); err != nil || l.RecoveryPoint() != 0 {
		t.Fatalf("flushed early: rp %d %v", l.RecoveryPoint(), err)
	}
	clk.Advance(time.Second)
	if err := l.FlushIfDue(clk.Now()); err != nil || l.RecoveryPoint() != 2 {
		t.Fatalf("not flushed: rp %d %v", l.RecoveryPoint(), err)
	}
}

func TestOSFSLog(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(OSFS(), dir, TopicPartition{Topic: "os", Partition: 2}, smallConfig(), testLogger(t), OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, 10, 30), 1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "os-2", segmentName(0)+".log")); err != nil {
		t.Fatal(err)
	}
	l, err = Open(OSFS(), dir, TopicPartition{Topic: "os", Partition: 2}, smallConfig(), testLogger(t), OpenOptions{CleanShutdown: false})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 10 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind %v", ents)
	}
}

func TestNewLogWritesItsLeaderEpochCheckpointWithTheFirstEpoch(t *testing.T) {
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	if ok, _, _ := fs.Stat("/data/t-0/leader-epoch-checkpoint"); ok {
		t.Fatal("a new, empty log wrote a leader-epoch-checkpoint")
	}
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 4)
	l.Close()
	if got := string(readFileBytes(t, fs, "/data/t-0/leader-epoch-checkpoint")); got != "0\n1\n4 0\n" {
		t.Fatalf("checkpoint %q after the first epoch", got)
	}
	// Reopened without a checkpoint (a crash right after creation), an
	// empty log is still empty and epoch-less.
	fs2 := NewMemFS()
	openTestLog(t, fs2, smallConfig(), OpenOptions{CleanShutdown: true}).Close()
	l2 := openTestLog(t, fs2, smallConfig(), OpenOptions{})
	defer l2.Close()
	if ep, end := l2.EndOffsetForEpoch(0); ep != -1 || end != -1 {
		t.Fatalf("empty log: epoch %d end %d", ep, end)
	}
}

func TestAppendInANewEpochLeavesTheEpochCheckpointToTheNextFlush(t *testing.T) {
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := string(readFileBytes(t, fs, "/data/t-0/leader-epoch-checkpoint")); got != "0\n1\n0 0\n" {
		t.Fatalf("checkpoint after the first flush %q", got)
	}
	mustAppend(t, l, testkit.SimpleBatch(2, 1, 1), 3)
	if got := string(readFileBytes(t, fs, "/data/t-0/leader-epoch-checkpoint")); got != "0\n1\n0 0\n" {
		t.Fatalf("an append in a new epoch wrote the checkpoint: %q", got)
	}
	// A crash before the next flush loses the unflushed batch with its
	// epoch: the log and its epochs end where the flush left them.
	r := openTestLog(t, fs.CrashClone(), smallConfig(), OpenOptions{})
	if leo := r.LogEndOffset(); leo != 2 {
		t.Fatalf("after a crash: LEO %d, want 2", leo)
	}
	if ep, end := r.EndOffsetForEpoch(0); ep != 0 || end != 2 || r.LatestEpoch() != 0 {
		t.Fatalf("after a crash: epoch 0 ends at %d (epoch %d), latest epoch %d; want 2, 0", end, ep, r.LatestEpoch())
	}
	r.Close()
	// The next flush writes it before the recovery point passes the batch.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := string(readFileBytes(t, fs, "/data/t-0/leader-epoch-checkpoint")); got != "0\n2\n0 0\n3 2\n" {
		t.Fatalf("checkpoint after the second flush %q", got)
	}
	l.Close()
}

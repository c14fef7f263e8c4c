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

// Tests of the storage-fault guarantees: whatever the disk does, an
// append is all or nothing, a truncation is durable and takes the
// producer snapshots above it along, the log never ends up without a
// segment, and the root checkpoints never describe a log that is gone.

func snapshotEnds(t *testing.T, fs FS, l *Log) []int64 {
	t.Helper()
	ends, err := l.producerSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// writeSnapshotFile writes a producer snapshot file directly, so that a
// test can hold several at once (WriteProducerSnapshot keeps one).
func writeSnapshotFile(t *testing.T, fs FS, l *Log, end int64) {
	t.Helper()
	if err := WriteFileAtomic(fs, filepath.Join(l.Dir(), segmentName(end)+producerSnapshotSuffix), []byte("state")); err != nil {
		t.Fatal(err)
	}
}

func appendRecords(t *testing.T, l *Log, batches, perBatch int) {
	t.Helper()
	for i := 0; i < batches; i++ {
		mustAppend(t, l, testkit.SimpleBatch(perBatch, 1000, 10), 0)
	}
}

func TestTruncationRemovesProducerSnapshotsAboveNewEnd(t *testing.T) {
	t.Run("TruncateTo", func(t *testing.T) {
		fs := NewMemFS()
		l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
		defer l.Close()
		appendRecords(t, l, 10, 10)
		writeSnapshotFile(t, fs, l, 30)
		writeSnapshotFile(t, fs, l, 50)
		writeSnapshotFile(t, fs, l, 100)
		if err := l.TruncateTo(50); err != nil {
			t.Fatal(err)
		}
		if got := snapshotEnds(t, fs, l); len(got) != 2 || got[0] != 30 || got[1] != 50 {
			t.Fatalf("snapshots after truncation to 50: %v, want [30 50]", got)
		}
		// The log grows past the old snapshot's offset again: the snapshot
		// found must not be the one describing the truncated batches.
		appendRecords(t, l, 6, 10)
		end, _, ok, err := l.LatestProducerSnapshot()
		if err != nil || !ok || end != 50 {
			t.Fatalf("latest snapshot %d ok=%v err=%v, want 50", end, ok, err)
		}
	})
	t.Run("TruncateFullyAndStartAt", func(t *testing.T) {
		fs := NewMemFS()
		l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
		defer l.Close()
		appendRecords(t, l, 10, 10)
		writeSnapshotFile(t, fs, l, 40)
		writeSnapshotFile(t, fs, l, 100)
		if err := l.TruncateFullyAndStartAt(200); err != nil {
			t.Fatal(err)
		}
		if got := snapshotEnds(t, fs, l); len(got) != 0 {
			t.Fatalf("snapshots after full truncation: %v", got)
		}
	})
	t.Run("snapshot above the log end is refused", func(t *testing.T) {
		fs := NewMemFS()
		l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
		defer l.Close()
		appendRecords(t, l, 2, 10)
		if err := l.WriteProducerSnapshot(30, []byte("x")); err == nil {
			t.Fatal("snapshot above the LEO written")
		}
		if err := l.WriteProducerSnapshot(20, []byte("x")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenRemovesProducerSnapshotsAboveRecoveredEnd(t *testing.T) {
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	appendRecords(t, l, 5, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 5, 10) // never flushed
	if err := l.WriteProducerSnapshot(100, []byte("state at 100")); err != nil {
		t.Fatal(err)
	}
	rp := l.RecoveryPoint()
	crashed := fs.CrashClone()
	l2 := openTestLog(t, crashed, smallConfig(), OpenOptions{RecoveryPoint: rp})
	defer l2.Close()
	if l2.LogEndOffset() != 50 {
		t.Fatalf("LEO after crash %d, want 50", l2.LogEndOffset())
	}
	if got := snapshotEnds(t, crashed, l2); len(got) != 0 {
		t.Fatalf("snapshots above the log end kept at open: %v", got)
	}
	appendRecords(t, l2, 6, 10)
	if end, _, ok, _ := l2.LatestProducerSnapshot(); ok {
		t.Fatalf("snapshot at %d of lost batches trusted", end)
	}
}

// ackedLog checks that l holds exactly the batches of acked, at offsets
// 0, n, 2n, ... (each batch n records).
func checkBatches(t *testing.T, l *Log, batches, perBatch int) {
	t.Helper()
	want := int64(batches * perBatch)
	if l.LogEndOffset() != want {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), want)
	}
	l.SetHighWatermark(want)
	hs := readAll(t, l, 0, want)
	if len(hs) != batches {
		t.Fatalf("%d batches, want %d", len(hs), batches)
	}
	for i, h := range hs {
		if h.BaseOffset != int64(i*perBatch) || h.LastOffset() != int64(i*perBatch+perBatch-1) {
			t.Fatalf("batch %d at %d..%d", i, h.BaseOffset, h.LastOffset())
		}
	}
}

// Index entries live in memory and reach their files when the log is
// flushed: an index write that fails fails the flush (the recovery point
// stays, so nothing more is acknowledged as durable), while the append
// itself, which no longer touches the index files, succeeds.
func TestFlushFailsWhileIndexWriteFailsAndRecovers(t *testing.T) {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		t.Run(suffix, func(t *testing.T) {
			mem := NewMemFS()
			var fail atomic.Bool
			efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
				if op == "write" && fail.Load() && strings.HasSuffix(name, "0"+suffix) {
					return syscall.ENOSPC
				}
				return nil
			}}
			l := openTestLog(t, efs, smallConfig(), OpenOptions{CleanShutdown: true})
			appendRecords(t, l, 3, 5)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			rp := l.RecoveryPoint()
			fail.Store(true)
			// Batches with rising timestamps, so that the time index
			// gains entries too.
			mustAppend(t, l, testkit.SimpleBatch(5, 5000, 10), 0)
			if err := l.Flush(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("flush with a failing %s: %v", suffix, err)
			}
			if l.RecoveryPoint() != rp {
				t.Fatalf("recovery point moved to %d by a failed flush (was %d)", l.RecoveryPoint(), rp)
			}
			fail.Store(false)
			mustAppend(t, l, testkit.SimpleBatch(5, 6000, 10), 0)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			checkBatches(t, l, 5, 5)
			// After a crash, recovery keeps every acknowledged batch.
			l2 := openTestLog(t, mem.CrashClone(), smallConfig(), OpenOptions{RecoveryPoint: 0})
			defer l2.Close()
			checkBatches(t, l2, 5, 5)
			// And a clean reopen's index sanity check accepts the indexes,
			// which hold an entry for every batch but the first.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l3 := openTestLog(t, mem, smallConfig(), OpenOptions{CleanShutdown: true})
			defer l3.Close()
			checkBatches(t, l3, 5, 5)
			if n := len(l3.active().idx.buf) / offsetIndexEntrySize; n != 4 {
				t.Fatalf("offset index has %d entries after reopen, want 4", n)
			}
		})
	}
}

func TestDeletedTopicRecreatedKeepsAcknowledgedRecordsAfterCrash(t *testing.T) {
	mem := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(mem, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.GetOrCreate(tp)
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 10, 10)
	l.SetHighWatermark(100)
	if _, err := l.DeleteRecordsBefore(100); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	// The topic is created again under the same name.
	l, err = m.GetOrCreate(tp)
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 2, 5)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(mem.CrashClone(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2 == nil {
		t.Fatal("recreated partition gone after crash")
	}
	if l2.LogStartOffset() != 0 {
		t.Fatalf("recreated topic's log start %d after crash, want 0", l2.LogStartOffset())
	}
	checkBatches(t, l2, 2, 5)
}

func TestStaleCheckpointEntriesRemovedAtOpen(t *testing.T) {
	mem := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(mem, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash after a deleted partition's directory went but before the
	// checkpoints were rewritten: they still name it.
	cp := encodeOffsetCheckpoint(map[TopicPartition]int64{{Topic: "t", Partition: 0}: 100})
	for _, f := range []string{recoveryPointCheckpointFile, replicationCheckpointFile, logStartCheckpointFile} {
		if err := WriteFileAtomic(mem, filepath.Join("/d1", f), cp); err != nil {
			t.Fatal(err)
		}
	}
	m2, err := OpenManager(mem.CrashClone(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l, err := m2.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 1, 5)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	m3, err := OpenManager(m2.fs.(*MemFS).CrashClone(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	l3 := m3.Get(TopicPartition{Topic: "t", Partition: 0})
	if l3 == nil {
		t.Fatal("new log gone after crash")
	}
	if l3.LogStartOffset() != 0 || l3.LogEndOffset() != 5 {
		t.Fatalf("new log after crash: log start %d, LEO %d; want 0, 5", l3.LogStartOffset(), l3.LogEndOffset())
	}
}

func TestTopicIDMismatchRecreateRewritesCheckpoints(t *testing.T) {
	// The path replication takes for a log left by an earlier topic of the
	// same name: Delete then GetOrCreate, through the Manager.
	mem := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(mem, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp)
	appendRecords(t, l, 4, 10)
	l.SetHighWatermark(40)
	if _, err := l.DeleteRecordsBefore(40); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(mem, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{recoveryPointCheckpointFile, replicationCheckpointFile, logStartCheckpointFile} {
		cp, err := decodeOffsetCheckpoint(readFileBytes(t, mem, filepath.Join("/d1", f)))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cp[tp]; ok {
			t.Fatalf("%s still names the deleted log: %v", f, cp)
		}
	}
}

func TestRollFailureNeverLeavesLogWithoutSegment(t *testing.T) {
	mem := NewMemFS()
	var fail atomic.Bool
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if op == "open" && fail.Load() && strings.Contains(name, segmentName(100)) {
			return syscall.EMFILE
		}
		return nil
	}}
	l := openTestLog(t, efs, smallConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	// A follower's first fetch starts at 100: the empty segment at 0 is
	// replaced by one at 100, whose files cannot be opened.
	b := testkit.SimpleBatch(5, 1000, 10)
	setBaseOffsetAndEpoch(b, 100, 3)
	fail.Store(true)
	if _, err := l.AppendAsFollower(append([]byte(nil), b...)); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("append with EMFILE on roll: %v", err)
	}
	if l.NumSegments() != 1 {
		t.Fatalf("%d segments after a failed roll", l.NumSegments())
	}
	if _, err := l.AppendAsFollower(append([]byte(nil), b...)); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("second append with EMFILE on roll: %v", err)
	}
	fail.Store(false)
	if _, err := l.AppendAsFollower(append([]byte(nil), b...)); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 105 {
		t.Fatalf("LEO %d, want 105", l.LogEndOffset())
	}

	// A roll of a full segment that fails keeps appending possible.
	cfg := smallConfig()
	cfg.SegmentBytes = int64(len(b)) * 2
	l.UpdateConfig(cfg)
	mustAppend(t, l, testkit.SimpleBatch(5, 1000, 10), 3)
	fail.Store(true)
	efs.Inject = func(op, name string) error {
		if op == "open" && strings.Contains(name, segmentName(110)) {
			return syscall.ENOSPC
		}
		return nil
	}
	if _, err := l.Append(testkit.SimpleBatch(5, 1000, 10), 3); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append with ENOSPC on roll: %v", err)
	}
	efs.Inject = nil
	if info := mustAppend(t, l, testkit.SimpleBatch(5, 1000, 10), 3); info.FirstOffset != 110 {
		t.Fatalf("append after failed roll at %d", info.FirstOffset)
	}
}

func TestRollKeepsEmptySegmentItCannotRemove(t *testing.T) {
	mem := NewMemFS()
	var fail atomic.Bool
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if op == "remove" && fail.Load() && strings.Contains(name, segmentName(0)) {
			return syscall.EIO
		}
		return nil
	}}
	l := openTestLog(t, efs, smallConfig(), OpenOptions{CleanShutdown: true})
	b := testkit.SimpleBatch(5, 1000, 10)
	setBaseOffsetAndEpoch(b, 100, 3)
	fail.Store(true)
	if _, err := l.AppendAsFollower(append([]byte(nil), b...)); err == nil {
		t.Fatal("roll replaced an empty segment it could not remove")
	}
	fail.Store(false)
	if _, err := l.AppendAsFollower(append([]byte(nil), b...)); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// An empty segment left below the new one would be taken for one that
	// lost its tail, and recovery would delete the segments after it.
	l2 := openTestLog(t, mem.CrashClone(), smallConfig(), OpenOptions{RecoveryPoint: 0})
	defer l2.Close()
	if l2.LogEndOffset() != 105 || l2.NumSegments() != 1 {
		t.Fatalf("after crash: LEO %d, %d segments", l2.LogEndOffset(), l2.NumSegments())
	}
	_ = l.Close()
}

func TestTruncateFullyFailureNeverLeavesLogWithoutSegment(t *testing.T) {
	mem := NewMemFS()
	var fail atomic.Bool
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if op == "open" && fail.Load() && strings.Contains(name, segmentName(500)) {
			return syscall.ENOSPC
		}
		return nil
	}}
	l := openTestLog(t, efs, smallConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	appendRecords(t, l, 4, 5)
	fail.Store(true)
	if err := l.TruncateFullyAndStartAt(500); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("full truncation with ENOSPC: %v", err)
	}
	if l.NumSegments() < 1 {
		t.Fatal("no segment left")
	}
	// The log is unchanged and usable.
	mustAppend(t, l, testkit.SimpleBatch(5, 1000, 10), 0)
	checkBatches(t, l, 5, 5)
	fail.Store(false)
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 500 || l.LogStartOffset() != 500 || l.NumSegments() != 1 {
		t.Fatalf("after full truncation: start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	if info := mustAppend(t, l, testkit.SimpleBatch(5, 1000, 10), 0); info.FirstOffset != 500 {
		t.Fatalf("append at %d", info.FirstOffset)
	}
}

func TestFollowerTruncationIsDurable(t *testing.T) {
	small := smallConfig()
	small.SegmentBytes = 600 // a few batches per segment
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: small}
	tp := TopicPartition{Topic: "t", Partition: 0}
	setup := func(t *testing.T) (*MemFS, *Manager, *Log) {
		mem := NewMemFS()
		m, err := OpenManager(mem, mcfg, nil, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.GetOrCreate(tp)
		if err != nil {
			t.Fatal(err)
		}
		appendRecords(t, l, 10, 10)
		if l.NumSegments() < 3 {
			t.Fatalf("only %d segments", l.NumSegments())
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteCheckpoints(); err != nil {
			t.Fatal(err)
		}
		return mem, m, l
	}
	rootRecoveryPoint := func(t *testing.T, fs FS) int64 {
		cp, err := decodeOffsetCheckpoint(readFileBytes(t, fs, filepath.Join("/d1", recoveryPointCheckpointFile)))
		if err != nil {
			t.Fatal(err)
		}
		return cp[tp]
	}
	t.Run("TruncateTo", func(t *testing.T) {
		mem, m, l := setup(t)
		defer m.Close()
		if err := l.TruncateTo(45); err != nil {
			t.Fatal(err)
		}
		if rp := rootRecoveryPoint(t, mem); rp > 40 {
			t.Fatalf("root recovery point %d above the truncated end 40", rp)
		}
		// Power loss right after the truncation returned.
		m2, err := OpenManager(mem.CrashClone(), mcfg, nil, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer m2.Close()
		checkBatches(t, m2.Get(tp), 4, 10)
	})
	t.Run("TruncateFullyAndStartAt", func(t *testing.T) {
		mem, m, l := setup(t)
		defer m.Close()
		if err := l.TruncateFullyAndStartAt(500); err != nil {
			t.Fatal(err)
		}
		m2, err := OpenManager(mem.CrashClone(), mcfg, nil, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer m2.Close()
		l2 := m2.Get(tp)
		if l2.LogStartOffset() != 500 || l2.LogEndOffset() != 500 || l2.NumSegments() != 1 {
			t.Fatalf("after crash: start %d end %d segments %d", l2.LogStartOffset(), l2.LogEndOffset(), l2.NumSegments())
		}
	})
	for _, op := range []string{"syncdir", "remove"} {
		t.Run("a failed "+op+" takes the log dir offline", func(t *testing.T) { testTruncationFailureTakesDirOffline(t, mcfg, op) })
	}
}

// testTruncationFailureTakesDirOffline: a truncation whose directory sync
// or segment removal fails is not durable, so nothing may be appended past
// it; the failure takes the whole log dir offline (Kafka's
// LogDirFailureChannel), after which no operation reaches the disk again —
// in particular the failed sync is never retried — and the partition's
// leadership moves elsewhere. After a restart the log opens with
// everything below the truncation point intact.
func testTruncationFailureTakesDirOffline(t *testing.T, mcfg ManagerConfig, failOp string) {
	tp := TopicPartition{Topic: "t", Partition: 0}
	small := mcfg.Defaults
	small.SegmentBytes = 600
	mcfg.Defaults = small
	mem := NewMemFS()
	var fail atomic.Bool
	var afterFailure atomic.Int64
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if !fail.Load() {
			return nil
		}
		afterFailure.Add(1)
		if op == failOp && (failOp != "remove" || strings.HasSuffix(name, logSuffix)) {
			return syscall.EIO
		}
		return nil
	}}
	m, err := OpenManager(efs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreate(tp)
	appendRecords(t, l, 10, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := l.TruncateTo(45); err == nil {
		t.Fatal("truncation reported durable though the disk failed")
	}
	reached := afterFailure.Load()
	b := testkit.SimpleBatch(5, 1000, 10)
	setBaseOffsetAndEpoch(b, 40, 1)
	// The dir's failure handler closes its logs in the background, so the
	// append meets either the offline dir or the closed log.
	if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrStorage) && !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append past a failed truncation: %v, want the storage error or a closed log", err)
	}
	if err := l.TruncateTo(45); err == nil {
		t.Fatal("a second truncation succeeded on an offline log dir")
	}
	if n := afterFailure.Load(); n != reached {
		t.Fatalf("%d disk operations after the dir failed; a failed dir is never touched again", n-reached)
	}
	fail.Store(false)
	m2, err := OpenManager(mem.CrashClone(), mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2 == nil || l2.LogEndOffset() < 40 {
		t.Fatalf("after restart: %v", l2)
	}
}

func TestShutdownWaitsForLogCreatedDuringIt(t *testing.T) {
	mem := NewMemFS()
	tp := TopicPartition{Topic: "late", Partition: 0}
	var (
		m          *Manager
		armed      atomic.Bool
		creating   = make(chan struct{})
		release    = make(chan struct{})
		releaseOne sync.Once
		violation  atomic.Bool
	)
	efs := &ErrorFS{FS: mem}
	efs.Inject = func(op, name string) error {
		if !armed.Load() {
			return nil
		}
		switch {
		case (op == "stat" || op == "mkdir") && strings.HasSuffix(name, tp.String()):
			close(creating)
			<-release
		case op == "open" && filepath.Dir(name) == "/d1" && (strings.Contains(name, "checkpoint") || strings.HasSuffix(name, cleanShutdownFile)):
			if m.Get(tp) == nil {
				// Shutdown writes its checkpoints and marker without the
				// log being created; let the creation finish so that
				// nothing hangs.
				violation.Store(true)
				releaseOne.Do(func() { close(release) })
			}
		}
		return nil
	}
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(efs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	var lateLog *Log
	done := make(chan error, 1)
	go func() {
		l, err := m.GetOrCreate(tp)
		lateLog = l
		done <- err
	}()
	<-creating
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	// Once Close has begun, give it the chance to run ahead of the
	// creation (it must not), then let the creation finish.
	testkit.Eventually(t, 10*time.Second, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.mu.closed {
			return errors.New("Close has not begun")
		}
		return nil
	})
	time.Sleep(20 * time.Millisecond) // the chance to run ahead; passing does not depend on it
	releaseOne.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if violation.Load() {
		t.Fatal("shutdown wrote its checkpoints and clean-shutdown marker while a log was being created")
	}
	if _, err := lateLog.Append(testkit.SimpleBatch(1, 1, 1), 0); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("log created during shutdown still open after it: %v", err)
	}
}

func TestTruncationOfUnflushedTailWritesNoRootCheckpoint(t *testing.T) {
	mem := NewMemFS()
	var writes atomic.Int32
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if op == "open" && strings.HasSuffix(name, recoveryPointCheckpointFile+tmpSuffix) {
			writes.Add(1)
		}
		return nil
	}}
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(efs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0})
	appendRecords(t, l, 5, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 5, 10) // not flushed
	before := writes.Load()
	if err := l.TruncateTo(70); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Fatalf("%d root checkpoint writes for a truncation above the recovery point", n)
	}
	if err := l.TruncateTo(30); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 1 {
		t.Fatalf("%d root checkpoint writes for a truncation below the recovery point, want 1", n)
	}
}

// After a restart the recovery points on disk are the ones the open just
// read: a follower truncating data it never flushed rewrites no root
// checkpoint then either.
func TestTruncationAfterRestartOfUnflushedTailWritesNoRootCheckpoint(t *testing.T) {
	mem := NewMemFS()
	mcfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	m, err := OpenManager(mem, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp)
	appendRecords(t, l, 5, 10)
	if err := m.Close(); err != nil { // flushes and writes the checkpoints
		t.Fatal(err)
	}
	var writes atomic.Int32
	efs := &ErrorFS{FS: mem, Inject: func(op, name string) error {
		if op == "open" && strings.HasSuffix(name, recoveryPointCheckpointFile+tmpSuffix) {
			writes.Add(1)
		}
		return nil
	}}
	m2, err := OpenManager(efs, mcfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	appendRecords(t, l2, 5, 10) // not flushed
	before := writes.Load()
	if err := l2.TruncateTo(70); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Fatalf("%d root checkpoint writes for a truncation above the recovery point read at open", n)
	}
}

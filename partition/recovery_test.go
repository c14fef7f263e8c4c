package partition

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// appendGarbage writes raw bytes at the end of the active segment file
// through the FS, as a torn write would leave them.
func appendGarbage(t *testing.T, fs FS, l *Log, garbage []byte) {
	t.Helper()
	l.mu.Lock()
	path := l.active().path
	l.mu.Unlock()
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(garbage); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
}

func TestRecoveryTornTail(t *testing.T) {
	good := testkit.SimpleBatch(3, 100, 40)
	cases := map[string][]byte{
		"partial batch":  good[:len(good)-7],
		"partial header": good[:20],
		"random garbage": bytes.Repeat([]byte{0xab}, 300),
		"zeros":          make([]byte, 200),
		"bad crc": func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)-1] ^= 0xff
			setBaseOffsetAndEpoch(b, 9, 0)
			return b
		}(),
		"offset backward": func() []byte { b := append([]byte(nil), good...); setBaseOffsetAndEpoch(b, 0, 0); return b }(),
	}
	for name, garbage := range cases {
		t.Run(name, func(t *testing.T) {
			fs := NewMemFS()
			l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
			for i := 0; i < 3; i++ {
				mustAppend(t, l, testkit.SimpleBatch(3, 100, 40), 0)
			}
			rp := l.RecoveryPoint()
			appendGarbage(t, fs, l, garbage)
			// Crash: no Close; the garbage is on "disk".
			l2 := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: false, RecoveryPoint: rp})
			defer l2.Close()
			if l2.LogEndOffset() != 9 {
				t.Fatalf("LEO %d, want 9", l2.LogEndOffset())
			}
			l2.SetHighWatermark(9)
			if hs := readAll(t, l2, 0, 9); len(hs) != 3 {
				t.Fatalf("%d batches", len(hs))
			}
			if info := mustAppend(t, l2, testkit.SimpleBatch(1, 1, 1), 0); info.FirstOffset != 9 {
				t.Fatalf("append after recovery at %d", info.FirstOffset)
			}
			l2.SetHighWatermark(10)
			if hs := readAll(t, l2, 0, 10); len(hs) != 4 {
				t.Fatalf("%d batches after append", len(hs))
			}
		})
	}
}

// TestRecoveryMidLogCorruption: with a clean shutdown the segments
// are not re-validated (only a cheap tail scan), so a flipped bit inside an
// old batch is not detected, while without it recovery cuts there.
func TestRecoveryMidLogCorruption(t *testing.T) {
	fs := NewMemFS()
	l := openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testkit.SimpleBatch(2, 100, 40), 0)
	}
	path := filepath.Join(l.Dir(), segmentName(0)+".log")
	l.Close()
	data := readFileBytes(t, fs, path)
	one := len(data) / 5
	data[2*one+BatchHeaderSize+3] ^= 0x01 // inside the third batch's records
	f, _ := fs.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	f.Write(data)
	f.Sync()
	f.Close()
	l = openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: true})
	if l.LogEndOffset() != 10 {
		t.Fatalf("clean open LEO %d", l.LogEndOffset())
	}
	l.Close()
	l = openTestLog(t, fs, smallConfig(), OpenOptions{CleanShutdown: false, RecoveryPoint: 0})
	defer l.Close()
	if l.LogEndOffset() != 4 {
		t.Fatalf("unclean open LEO %d, want 4 (cut at the corrupt batch)", l.LogEndOffset())
	}
}

// TestCrashKeepsFlushedPrefix crashes a MemFS at random points of a
// workload of appends, rolls and flushes and checks that the reopened log is
// a prefix of what was appended, holds everything flushed, and works.
func TestCrashKeepsFlushedPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 60; iter++ {
		fs := NewMemFS()
		cfg := smallConfig()
		cfg.SegmentBytes = 2000
		l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
		var appended [][]byte
		var flushedLEO, checkpointRP int64
		var crash *MemFS
		steps := 5 + rng.Intn(60)
		crashAt := rng.Intn(steps)
		for s := 0; s < steps; s++ {
			b := testkit.SimpleBatch(1+rng.Intn(4), int64(s), rng.Intn(300))
			mustAppend(t, l, b, int32(s/20))
			appended = append(appended, append([]byte(nil), b...))
			if rng.Intn(4) == 0 {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				flushedLEO = l.LogEndOffset()
				if rng.Intn(2) == 0 {
					checkpointRP = l.RecoveryPoint()
				}
			}
			if s == crashAt {
				crash = fs.CrashClone()
				break
			}
		}
		l.Close()
		l2, err := Open(crash, "/data", TopicPartition{Topic: "t", Partition: 0}, cfg, testLogger(t), OpenOptions{RecoveryPoint: checkpointRP})
		if err != nil {
			t.Fatalf("iter %d: reopen: %v", iter, err)
		}
		leo := l2.LogEndOffset()
		if leo < flushedLEO {
			t.Fatalf("iter %d: LEO %d lost flushed data up to %d", iter, leo, flushedLEO)
		}
		l2.SetHighWatermark(leo)
		got := readAll(t, l2, 0, leo)
		var all []byte
		for off := int64(0); off < leo; {
			ri, _ := l2.Read(off, 1<<30, leo, true)
			if len(ri.Records) == 0 {
				break
			}
			all = append(all, ri.Records...)
			hs, _ := ValidateBatches(ri.Records, math32)
			off = hs[len(hs)-1].NextOffset()
		}
		var want []byte
		for _, b := range appended[:len(got)] {
			want = append(want, b...)
		}
		if !bytes.Equal(all, want) {
			t.Fatalf("iter %d: recovered %d batches are not a prefix of what was appended", iter, len(got))
		}
		if len(got) > 0 && got[len(got)-1].NextOffset() != leo {
			names, _ := crash.ReadDir("/data/t-0")
			t.Fatalf("iter %d: LEO %d does not follow last batch %+v; files %v flushed %d rp %d", iter, leo, got[len(got)-1], names, flushedLEO, checkpointRP)
		}
		if info, err := l2.Append(testkit.SimpleBatch(1, 1, 1), 9); err != nil || info.FirstOffset != leo {
			t.Fatalf("iter %d: append after recovery: %v %+v", iter, err, info)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckpointAtomicity(t *testing.T) {
	fs := NewMemFS()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	fs.SyncDir("/")
	path := "/d/recovery-point-offset-checkpoint"
	old := encodeOffsetCheckpoint(map[TopicPartition]int64{{Topic: "a", Partition: 1}: 10})
	if err := WriteFileAtomic(fs, path, old); err != nil {
		t.Fatal(err)
	}
	// Crash after the temp file was written and synced, before the rename.
	efs := &ErrorFS{FS: fs, Inject: func(op, name string) error {
		if op == "rename" {
			return errors.New("crash")
		}
		return nil
	}}
	newer := encodeOffsetCheckpoint(map[TopicPartition]int64{{Topic: "a", Partition: 1}: 20})
	if err := WriteFileAtomic(efs, path, newer); err == nil {
		t.Fatal("expected injected failure")
	}
	crashed := fs.CrashClone()
	data, ok, err := readWholeFile(crashed, path)
	if err != nil || !ok || !bytes.Equal(data, old) {
		t.Fatalf("old checkpoint not readable after crash: %q %v %v", data, ok, err)
	}
	cp, err := decodeOffsetCheckpoint(data)
	if err != nil || cp[TopicPartition{Topic: "a", Partition: 1}] != 10 {
		t.Fatalf("%v %v", cp, err)
	}
	// And without the dir sync the rename is not durable either.
	if err := WriteFileAtomic(&ErrorFS{FS: fs, Inject: func(op, _ string) error {
		if op == "syncdir" {
			return errors.New("crash")
		}
		return nil
	}}, path, newer); err == nil {
		t.Fatal("expected injected failure")
	}
	data, _, _ = readWholeFile(fs.CrashClone(), path)
	if !bytes.Equal(data, old) {
		t.Fatalf("un-synced rename survived a crash: %q", data)
	}
	// Completed write is durable.
	if err := WriteFileAtomic(fs, path, newer); err != nil {
		t.Fatal(err)
	}
	data, _, _ = readWholeFile(fs.CrashClone(), path)
	if !bytes.Equal(data, newer) {
		t.Fatalf("completed checkpoint lost: %q", data)
	}
}

func TestMemFSCrashDropsUnsynced(t *testing.T) {
	fs := NewMemFS()
	fs.MkdirAll("/a", 0o755)
	f, _ := fs.OpenFile("/a/f", os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	f.Write([]byte("hello"))
	if c := fs.CrashClone(); func() bool { ok, _, _ := c.Stat("/a/f"); return ok }() {
		t.Fatal("file survived without dir sync")
	}
	fs.SyncDir("/")
	fs.SyncDir("/a")
	f.Sync()
	f.Write([]byte(" world"))
	c := fs.CrashClone()
	if got := readFileBytes(t, c, "/a/f"); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
}

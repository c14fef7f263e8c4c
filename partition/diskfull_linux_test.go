//go:build linux

package partition

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// readRaw returns the bytes of every batch from offset 0 to the LEO.
func readRaw(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	leo := l.LogEndOffset()
	for off := l.LogStartOffset(); off < leo; {
		ri, err := l.Read(off, 1<<20, leo, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(ri.Records) == 0 {
			t.Fatalf("read %d: nothing below LEO %d", off, leo)
		}
		out = append(out, ri.Records...)
		off = ri.NextOffset
	}
	return out
}

// TestDiskFullAppendFailsAndKeepsAcknowledged fills a real, size-limited
// filesystem (a tmpfs, which needs root to mount) from several logs at
// once, so that the full disk is met by log writes (appends past it fail
// with ENOSPC and change nothing) and by index writes (flushes fail, so
// nothing is acknowledged), whichever needs a new page first; once space
// is freed every acknowledged batch
// (appended without error, then flushed) is there, in memory and after a
// reopen with full recovery.
func TestDiskFullAppendFailsAndKeepsAcknowledged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a size-limited tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs at %s: %v", dir, err)
	}
	var open []*Log // closed before the unmount, even if the test fails
	t.Cleanup(func() {
		for _, l := range open {
			_ = l.Close()
		}
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	// Room to free later: enough for every log's pending index entries
	// (held in memory while the disk was full, see index) to take a new
	// page in each index file.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 10 // rolls before the disk is full
	cfg.IndexIntervalBytes = 0  // index entries for every batch
	type state struct {
		l        *Log
		tp       TopicPartition
		appended []byte // every batch appended without error, as stored
		acked    int    // bytes of appended that a successful flush covers
		failures int
		leo      int64
	}
	logs := make([]*state, 16)
	for i := range logs {
		tp := TopicPartition{Topic: "full", Partition: int32(i)}
		l, err := Open(OSFS(), dir, tp, cfg, testLogger(t), OpenOptions{CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, l)
		logs[i] = &state{l: l, tp: tp}
	}
	appendOne := func(s *state, ts int64) error {
		b := testkit.SimpleBatch(1, ts, 20)
		info, err := s.l.Append(b, 0)
		if err != nil {
			if s.l.LogEndOffset() != s.leo {
				t.Fatalf("%s: failed append moved the LEO from %d to %d", s.tp, s.leo, s.l.LogEndOffset())
			}
			return err
		}
		if info.FirstOffset != s.leo {
			t.Fatalf("%s: appended at %d, want %d", s.tp, info.FirstOffset, s.leo)
		}
		s.leo = info.LastOffset + 1
		s.appended = append(s.appended, b...)
		if err := s.l.Flush(); err == nil {
			s.acked = len(s.appended)
		}
		return nil
	}
	full := 0
	for ts := int64(1000); full < len(logs) && ts < 1_000_000; ts++ {
		full = 0
		for _, s := range logs {
			if s.failures >= 3 {
				full++
				continue
			}
			if err := appendOne(s, ts); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("%s: append failed with %v, want ENOSPC", s.tp, err)
				}
				s.failures++
			}
		}
	}
	if full < len(logs) {
		t.Fatal("the disk never filled up")
	}
	for _, s := range logs {
		if got := readRaw(t, s.l); !bytes.Equal(got, s.appended) {
			t.Fatalf("%s differs from what was appended (%d bytes read, %d appended)", s.tp, len(got), len(s.appended))
		}
	}

	// Space comes back: appending works again and nothing was lost.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, s := range logs {
		if err := appendOne(s, 2_000_000); err != nil {
			t.Fatalf("%s: append after freeing space: %v", s.tp, err)
		}
		if s.acked != len(s.appended) {
			t.Fatalf("%s: flush after freeing space failed", s.tp)
		}
		if err := s.l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Reopen with full recovery: every batch is re-validated.
	for _, s := range logs {
		l, err := Open(OSFS(), dir, s.tp, cfg, testLogger(t), OpenOptions{RecoveryPoint: 0})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, l)
		if got := readRaw(t, l); !bytes.Equal(got, s.appended) {
			t.Fatalf("%s after reopen differs from what was appended (%d bytes read, %d appended)", s.tp, len(got), len(s.appended))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package partition

import (
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func testLogger(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t))
	}
	return zerolog.Nop()
}

func openTestLog(t testing.TB, fs FS, cfg Config, opts OpenOptions) *Log {
	t.Helper()
	// The log dir itself is the manager's to create durably.
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	fs.SyncDir("/")
	l, err := Open(fs, "/data", TopicPartition{Topic: "t", Partition: 0}, cfg, testLogger(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendInfo {
	t.Helper()
	if _, err := ValidateBatches(b, math32); err != nil {
		t.Fatal(err)
	}
	info, err := l.Append(b, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

const math32 = 1<<31 - 1

// readAll reads every batch from offset to maxOffset, following segments.
func readAll(t testing.TB, l *Log, from, maxOffset int64) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	for off := from; off < maxOffset; {
		ri, err := l.Read(off, 1<<20, maxOffset, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(ri.Records) == 0 {
			break
		}
		hs, err := ValidateBatches(ri.Records, math32)
		if err != nil {
			t.Fatalf("read %d returned invalid batches: %v", off, err)
		}
		out = append(out, hs...)
		off = hs[len(hs)-1].NextOffset()
	}
	return out
}

func readFileBytes(t testing.TB, fs FS, name string) []byte {
	t.Helper()
	f, err := fs.OpenFile(name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

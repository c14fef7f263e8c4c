package partition

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/rs/zerolog"
)

// testBatch describes a v2 batch to encode by hand.
type testBatch struct {
	firstTs  int64
	tsDeltas []int64 // one per record
	valueLen int
	codec    int8
	pid      int64 // -1 for none
}

func encodeRecords(tb testBatch) []byte {
	var out []byte
	val := bytes.Repeat([]byte{'v'}, tb.valueLen)
	for i, d := range tb.tsDeltas {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, d)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		body = binary.AppendVarint(body, int64(len(val)))
		body = append(body, val...)
		body = binary.AppendVarint(body, 0) // no headers
		out = binary.AppendVarint(out, int64(len(body)))
		out = append(out, body...)
	}
	return out
}

func compress(t testing.TB, codec int8, b []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case CompressionNone:
		return b
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
	case CompressionZstd:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.Close()
	default:
		t.Fatalf("codec %d not supported by the test encoder", codec)
	}
	return buf.Bytes()
}

// makeBatch encodes a v2 batch with base offset 0 and leader epoch -1, as
// a producer sends it.
func makeBatch(t testing.TB, tb testBatch) []byte {
	n := len(tb.tsDeltas)
	recs := compress(t, tb.codec, encodeRecords(tb))
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs))
	b = append(b, recs...)
	maxDelta := int64(0)
	for _, d := range tb.tsDeltas {
		maxDelta = max(maxDelta, d)
	}
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(tb.codec))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(tb.firstTs))
	binary.BigEndian.PutUint64(b[35:], uint64(tb.firstTs+maxDelta))
	pid := tb.pid
	seq := int32(-1)
	if pid == 0 {
		pid = -1
	}
	if pid >= 0 {
		seq = 0
	}
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// simpleBatch has n records with timestamps ts, ts+1, ...
func simpleBatch(t testing.TB, n int, ts int64, valueLen int) []byte {
	d := make([]int64, n)
	for i := range d {
		d[i] = int64(i)
	}
	return makeBatch(t, testBatch{firstTs: ts, tsDeltas: d, valueLen: valueLen})
}

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

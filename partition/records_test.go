package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/gokafka/gokafka/internal/testkit"
)

// bombBatch is a zstd batch declaring n records whose records section
// decompresses to n records of recordValue bytes each: one compressed
// frame repeated n times (concatenated zstd frames decode to the
// concatenation), so that a few hundred KiB on disk expand to gigabytes.
func bombBatch(t testing.TB, n int, recordValue int) []byte {
	var rec []byte
	rec = append(rec, 0)               // attributes
	rec = binary.AppendVarint(rec, 0)  // timestamp delta
	rec = binary.AppendVarint(rec, 0)  // offset delta
	rec = binary.AppendVarint(rec, -1) // null key
	rec = binary.AppendVarint(rec, int64(recordValue))
	rec = append(rec, make([]byte, recordValue)...)
	rec = binary.AppendVarint(rec, 0)
	framed := binary.AppendVarint(nil, int64(len(rec)))
	framed = append(framed, rec...)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(framed, nil)
	body := bytes.Repeat(frame, n)
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(CompressionZstd))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], 1000)
	binary.BigEndian.PutUint64(b[35:], 1_000_000) // claims a later record than any
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A batch of a few hundred KiB that decompresses to 1 GiB: ListOffsets by
// timestamp streams it and refuses it as CORRUPT_MESSAGE once it passes
// its bound, allocating a small fraction of it (the whole batch is never
// in memory).
func TestOffsetForTimestampBoundsDecompressionBomb(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared uint32
	}{
		// 1024 records of 1 MiB declared: the record-count bound is
		// 1 GiB, so maxDecompressed (256 MiB) stops it.
		{"many_records", 1024},
		// One record declared and 1024 present: stopped after the first
		// (its own bound is max.message.bytes) because more remain.
		{"one_record_declared", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bombBatch(t, 1024, 1<<20)
			binary.BigEndian.PutUint32(b[23:], tc.declared-1)
			binary.BigEndian.PutUint32(b[57:], tc.declared)
			binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			if len(b) > 1<<20 {
				t.Fatalf("bomb batch is %d bytes; it should fit max.message.bytes", len(b))
			}
			l := openTestLog(t, NewMemFS(), smallConfig(), OpenOptions{CleanShutdown: true})
			defer l.Close()
			mustAppend(t, l, b, 0)
			l.SetHighWatermark(l.LogEndOffset())

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, _, ok, err := l.OffsetForTimestamp(2000) // later than every record: all are read
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorruptMessage) || ok {
				t.Fatalf("lookup in a decompression bomb: ok=%v err=%v, want CORRUPT_MESSAGE", ok, err)
			}
			grew := after.TotalAlloc - before.TotalAlloc
			t.Logf("a %d KiB batch expanding to 1 GiB: %d KiB allocated by the lookup", len(b)>>10, grew>>10)
			if grew > 96<<20 {
				t.Fatalf("the lookup allocated %d MiB for a %d KiB batch", grew>>20, len(b)>>10)
			}
		})
	}
}

// Every codec's records come out of the iterator as they went in, and a
// record beyond the record bound is corrupt.
func TestRecordIterStreamsEachCodec(t *testing.T) {
	for _, codec := range []int8{CompressionNone, CompressionGzip, CompressionZstd} {
		b := testkit.Batch{FirstTimestamp: 500, TimestampDeltas: []int64{0, 7, 3}, ValueLen: 100, Codec: codec}.Encode(t)
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		it, err := NewRecordIter(h, bytes.NewReader(b[BatchHeaderSize:]), 1000, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for it.Next() {
			got = append(got, it.Offset, it.Timestamp)
			if len(it.Body) < 100 {
				t.Fatalf("codec %d: record body of %d bytes", codec, len(it.Body))
			}
		}
		it.Close()
		if it.Err() != nil || len(got) != 6 || got[1] != 500 || got[2] != 1 || got[3] != 507 || got[5] != 503 {
			t.Fatalf("codec %d: records %v, err %v", codec, got, it.Err())
		}
		it, _ = NewRecordIter(h, bytes.NewReader(b[BatchHeaderSize:]), 10, false)
		for it.Next() {
		}
		it.Close()
		if !errors.Is(it.Err(), ErrCorruptMessage) {
			t.Fatalf("codec %d: a 100-byte value with a 10-byte record bound: %v", codec, it.Err())
		}
	}
}

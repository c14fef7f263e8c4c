package testkit

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression codecs, as a batch's attributes carry them.
const (
	CodecNone int8 = 0
	CodecGzip int8 = 1
	CodecZstd int8 = 4
)

// batchHeaderSize is the v2 batch header length before the records.
const batchHeaderSize = 61

// Batch describes a v2 record batch as a producer sends it: base offset 0,
// partition leader epoch -1, no producer id, every record with a null key,
// a value of ValueLen 'v' bytes and no headers.
type Batch struct {
	// FirstTimestamp is the batch's first timestamp.
	FirstTimestamp int64
	// TimestampDeltas holds one timestamp delta per record; nil means
	// Records records with deltas 0, 1, 2, ...
	TimestampDeltas []int64
	// Records is the record count when TimestampDeltas is nil.
	Records  int
	ValueLen int
	// Codec compresses the records and is ORed into the attributes.
	Codec int8
	// Attributes are further attribute bits (transactional 0x10, control
	// 0x20).
	Attributes uint16
}

// SimpleBatch is n records with timestamps firstTs, firstTs+1, ... and
// values of valueLen bytes, uncompressed.
func SimpleBatch(n int, firstTs int64, valueLen int) []byte {
	return Batch{FirstTimestamp: firstTs, Records: n, ValueLen: valueLen}.Encode(nil)
}

// Encode returns the batch's bytes with a correct CRC. t, when not nil,
// fails the test on an unsupported codec (nil panics instead).
func (b Batch) Encode(t testing.TB) []byte {
	deltas := b.TimestampDeltas
	if deltas == nil {
		deltas = make([]int64, b.Records)
		for i := range deltas {
			deltas[i] = int64(i)
		}
	}
	n := len(deltas)
	recs := compress(t, b.Codec, encodeRecords(deltas, b.ValueLen))
	out := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	out = append(out, recs...)
	maxDelta := int64(0)
	for _, d := range deltas {
		maxDelta = max(maxDelta, d)
	}
	binary.BigEndian.PutUint64(out[0:], 0)                                  // base offset
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))                // batch length
	binary.BigEndian.PutUint32(out[12:], 0xffffffff)                        // partition leader epoch
	out[16] = 2                                                             // magic
	binary.BigEndian.PutUint16(out[21:], uint16(b.Codec)|b.Attributes)      // attributes
	binary.BigEndian.PutUint32(out[23:], uint32(n-1))                       // last offset delta
	binary.BigEndian.PutUint64(out[27:], uint64(b.FirstTimestamp))          // first timestamp
	binary.BigEndian.PutUint64(out[35:], uint64(b.FirstTimestamp+maxDelta)) // max timestamp
	binary.BigEndian.PutUint64(out[43:], 0xffffffffffffffff)                // producer id -1
	binary.BigEndian.PutUint16(out[51:], 0xffff)                            // producer epoch -1
	binary.BigEndian.PutUint32(out[53:], 0xffffffff)                        // base sequence -1
	binary.BigEndian.PutUint32(out[57:], uint32(n))                         // record count
	FixCRC(out)
	return out
}

// FixCRC recomputes a v2 batch's CRC-32C over attributes..end, for tests
// that edit a header field.
func FixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

func encodeRecords(deltas []int64, valueLen int) []byte {
	var out []byte
	val := bytes.Repeat([]byte{'v'}, valueLen)
	for i, d := range deltas {
		var body []byte
		body = append(body, 0)                            // attributes
		body = binary.AppendVarint(body, d)               // timestamp delta
		body = binary.AppendVarint(body, int64(i))        // offset delta
		body = binary.AppendVarint(body, -1)              // null key
		body = binary.AppendVarint(body, int64(len(val))) // value length
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
	case CodecNone:
		return b
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
	case CodecZstd:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			fail(t, err.Error())
		}
		w.Write(b)
		w.Close()
	default:
		fail(t, "codec not supported by the test encoder")
	}
	return buf.Bytes()
}

func fail(t testing.TB, msg string) {
	if t == nil {
		panic(msg)
	}
	t.Helper()
	t.Fatal(msg)
}

package partition

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"

	"github.com/gokafka/gokafka/internal/testkit"
)

// FuzzRecordIter feeds arbitrary batches (header and records, compressed
// as the header says) to the record iterator that ListOffsets by
// timestamp, and every later reader of records inside a batch, uses.
// Nothing may panic, an iteration always ends, and what comes out of the
// decoder never exceeds the batch's RecordsLimit: a decompression bomb
// costs bounded memory.
func FuzzRecordIter(f *testing.F) {
	for _, codec := range []int8{CompressionNone, CompressionGzip, CompressionZstd} {
		for _, n := range []int{1, 3} {
			deltas := make([]int64, n)
			for i := range deltas {
				deltas[i] = int64(i * 5)
			}
			f.Add(testkit.Batch{FirstTimestamp: 1000, TimestampDeltas: deltas, ValueLen: 40, Codec: codec}.Encode(f), int32(1000), true)
		}
	}
	// LZ4 and snappy seeds: the same records, framed as Kafka clients
	// frame them.
	plain := testkit.Batch{FirstTimestamp: 1000, TimestampDeltas: []int64{0, 5}, ValueLen: 40}.Encode(f)
	var lz bytes.Buffer
	w := lz4.NewWriter(&lz)
	w.Write(plain[BatchHeaderSize:])
	w.Close()
	f.Add(withCodec(plain, CompressionLZ4, lz.Bytes()), int32(1000), true)
	f.Add(withCodec(plain, CompressionSnappy, snappy.Encode(nil, plain[BatchHeaderSize:])), int32(1000), false)
	f.Fuzz(func(t *testing.T, batch []byte, maxRecordBytes int32, withBody bool) {
		h, err := ParseBatchHeader(batch)
		if err != nil {
			return
		}
		it, err := NewRecordIter(h, bytes.NewReader(batch[BatchHeaderSize:]), maxRecordBytes, withBody)
		if err != nil {
			return
		}
		defer it.Close()
		limit := RecordsLimit(h, maxRecordBytes)
		var n int64
		var bodyBytes int64
		for it.Next() {
			n++
			bodyBytes += int64(len(it.Body))
			if n > int64(h.NumRecords) {
				t.Fatalf("%d records from a batch declaring %d", n, h.NumRecords)
			}
		}
		if bodyBytes > limit {
			t.Fatalf("%d record bytes read past the batch's limit %d", bodyBytes, limit)
		}
	})
}

// withCodec is batch's header with records as its records, compressed
// with codec.
func withCodec(batch []byte, codec int8, records []byte) []byte {
	out := append(append([]byte(nil), batch[:BatchHeaderSize]...), records...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	attrs := binary.BigEndian.Uint16(out[21:])&^7 | uint16(codec)
	binary.BigEndian.PutUint16(out[21:], attrs)
	return out
}

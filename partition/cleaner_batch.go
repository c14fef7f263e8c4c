package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Re-writing a batch that lost records to compaction. The retained
// records are copied as they were encoded (their offset and timestamp
// deltas stay relative to the original base offset and first timestamp,
// which the new batch keeps), so every record keeps its offset and
// timestamp; the batch keeps its offset range (last offset delta),
// partition leader epoch, attributes and producer id, epoch and base
// sequence, and is compressed with its original codec. Only the record
// count, the max timestamp (of CreateTime batches) and the CRC change.

// rebuildBatch returns batch h holding only records, the concatenated
// length-prefixed retained records, n of them, uncompressed; maxTs is
// their largest timestamp.
func rebuildBatch(h BatchHeader, records []byte, n int32, maxTs int64) ([]byte, error) {
	body, err := compressRecords(h.Compression(), records)
	if err != nil {
		return nil, err
	}
	if h.TimestampType() == 1 || maxTs < 0 {
		maxTs = h.MaxTimestamp // LogAppendTime: the batch's time stays
	}
	return encodeBatch(h, h.Attributes, body, n, h.FirstTimestamp, maxTs), nil
}

// attrDeleteHorizon marks a batch whose first-timestamp field holds its
// delete horizon (KIP-534): the time after which the cleaner may drop its
// tombstones, or the marker it is.
const attrDeleteHorizon = 0x40

// rebuildBatchWithHorizon is rebuildBatch for a batch given a delete
// horizon: the first-timestamp field becomes the horizon and every
// record's timestamp delta is re-based on it, so that record timestamps
// (first timestamp plus delta) stay what they were.
func rebuildBatchWithHorizon(h BatchHeader, records []byte, n int32, maxTs, horizon int64) ([]byte, error) {
	rebased := make([]byte, 0, len(records)+int(n)*4)
	for b := records; len(b) > 0; {
		l, k := binary.Varint(b)
		if k <= 0 || l < 1 || l > int64(len(b)-k) {
			return nil, fmt.Errorf("%w: record framing", ErrCorruptMessage)
		}
		body := b[k : k+int(l)]
		b = b[k+int(l):]
		if len(body) < 2 {
			return nil, fmt.Errorf("%w: record framing", ErrCorruptMessage)
		}
		d, dk := binary.Varint(body[1:])
		if dk <= 0 {
			return nil, fmt.Errorf("%w: record timestamp delta", ErrCorruptMessage)
		}
		nb := make([]byte, 0, len(body)+8)
		nb = append(nb, body[0])
		nb = binary.AppendVarint(nb, h.FirstTimestamp+d-horizon)
		nb = append(nb, body[1+dk:]...)
		rebased = binary.AppendVarint(rebased, int64(len(nb)))
		rebased = append(rebased, nb...)
	}
	body, err := compressRecords(h.Compression(), rebased)
	if err != nil {
		return nil, err
	}
	if h.TimestampType() == 1 || maxTs < 0 {
		maxTs = h.MaxTimestamp
	}
	return encodeBatch(h, h.Attributes|attrDeleteHorizon, body, n, horizon, maxTs), nil
}

// emptyBatch is h with no records (Kafka's RETAIN_EMPTY): it keeps the
// batch's offsets, producer id, epoch and sequence range so that the
// producer's state, rebuilt from the log, survives the removal of its
// records; and it marks the offset range a cleaned segment ends with.
func emptyBatch(h BatchHeader) []byte {
	attrs := h.Attributes &^ attrCompressionMask
	return encodeBatch(h, attrs, nil, 0, h.FirstTimestamp, h.MaxTimestamp)
}

// fillerBatch is an empty batch spanning h's offsets with no producer and
// no control flag: what a cleaned segment ends with when its last batch
// lost every record, so that it still ends where the segments it
// replaced did.
func fillerBatch(h BatchHeader) []byte {
	f := h
	f.ProducerID, f.ProducerEpoch, f.BaseSequence = -1, -1, -1
	return encodeBatch(f, h.Attributes&attrTimestampType, nil, 0, h.FirstTimestamp, h.MaxTimestamp)
}

func encodeBatch(h BatchHeader, attrs int16, body []byte, n int32, firstTs, maxTs int64) []byte {
	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(out[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(out[offBatchLength:], uint32(BatchHeaderSize-logOverhead+len(body)))
	be.PutUint32(out[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	out[offMagic] = 2
	be.PutUint16(out[offAttributes:], uint16(attrs))
	be.PutUint32(out[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(out[offFirstTimestamp:], uint64(firstTs))
	be.PutUint64(out[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(out[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(out[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(out[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(out[offNumRecords:], uint32(n))
	out = append(out, body...)
	be.PutUint32(out[offCRC:], batchCRC(out))
	return out
}

// xerialHeader starts snappy data in the framing Kafka's Java clients
// write and read (snappy-java's SnappyOutputStream): magic, version 1,
// compatible version 1, then chunks of a 4-byte length and a block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

const xerialChunk = 32 << 10

// zstdEncoder is the one encoder every rebuilt zstd batch goes through,
// made on first use: EncodeAll may be called concurrently, and an encoder
// is too costly to build per batch.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil)
})

func compressRecords(codec int8, raw []byte) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return raw, nil
	case CompressionGzip:
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case CompressionSnappy:
		out := append([]byte(nil), xerialHeader...)
		for len(raw) > 0 {
			n := min(len(raw), xerialChunk)
			blk := snappy.Encode(nil, raw[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
			raw = raw[n:]
		}
		return out, nil
	case CompressionLZ4:
		var b bytes.Buffer
		w := lz4.NewWriter(&b)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(raw, nil), nil
	}
	return nil, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
}

// recordKey returns the key of a record (its bytes after the length
// prefix, as RecordIter.Body holds them) without copying, and whether its
// value is null (a tombstone). ok is false for a record that does not
// parse.
func recordKey(body []byte) (key []byte, hasKey, tombstone, ok bool) {
	r := varintReader{b: body, ok: true}
	r.byte()   // attributes
	r.varint() // timestamp delta
	r.varint() // offset delta
	kl := r.varint()
	if !r.ok || kl < -1 || kl > int64(len(r.b)) {
		return nil, false, false, false
	}
	if kl >= 0 {
		key, hasKey = r.b[:kl], true
		r.b = r.b[kl:]
	}
	vl := r.varint()
	if !r.ok || vl < -1 {
		return nil, false, false, false
	}
	return key, hasKey, vl == -1, true
}

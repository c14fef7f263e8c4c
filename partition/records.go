package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file is the lookup path only (ListOffsets by timestamp): it looks
// inside batches to find one record's offset. The produce and fetch paths
// never decompress.

// maxDecompressed bounds how much a single batch may expand to, so that a
// hostile batch already on disk cannot exhaust memory during a lookup.
const maxDecompressed = 256 << 20

// recordsSection returns the uncompressed records of a batch.
func recordsSection(batch []byte, h BatchHeader) ([]byte, error) {
	body := batch[BatchHeaderSize:]
	switch h.Compression() {
	case CompressionNone:
		return body, nil
	case CompressionGzip:
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorruptMessage, err)
		}
		defer r.Close()
		return readBounded(r)
	case CompressionSnappy:
		return snappyDecode(body)
	case CompressionLZ4:
		return readBounded(lz4.NewReader(bytes.NewReader(body)))
	case CompressionZstd:
		d, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return readBounded(d)
	default:
		return nil, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, h.Compression())
	}
}

func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrCorruptMessage, err)
	}
	if len(b) > maxDecompressed {
		return nil, fmt.Errorf("%w: batch decompresses beyond %d bytes", ErrCorruptMessage, maxDecompressed)
	}
	return b, nil
}

// xerialMagic starts snappy data framed the way the Java client's
// snappy-java SnappyOutputStream writes it; librdkafka and Go clients send
// raw snappy blocks.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func snappyDecode(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, xerialMagic) {
		if n, err := snappy.DecodedLen(b); err != nil || n > maxDecompressed {
			return nil, fmt.Errorf("%w: snappy block", ErrCorruptMessage)
		}
		out, err := snappy.Decode(nil, b)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
		}
		return out, nil
	}
	// magic(8) version(4) compatible(4), then [len uint32][snappy block]...
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: xerial header truncated", ErrCorruptMessage)
	}
	var out []byte
	for p := 16; p < len(b); {
		if len(b)-p < 4 {
			return nil, fmt.Errorf("%w: xerial chunk header truncated", ErrCorruptMessage)
		}
		n := int(binary.BigEndian.Uint32(b[p:]))
		p += 4
		if n < 0 || n > len(b)-p {
			return nil, fmt.Errorf("%w: xerial chunk length %d", ErrCorruptMessage, n)
		}
		dl, err := snappy.DecodedLen(b[p : p+n])
		if err != nil || len(out)+dl > maxDecompressed {
			return nil, fmt.Errorf("%w: xerial chunk", ErrCorruptMessage)
		}
		out, err = snappyAppend(out, b[p:p+n], dl)
		if err != nil {
			return nil, err
		}
		p += n
	}
	return out, nil
}

func snappyAppend(dst, src []byte, dl int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, dl)...)
	if _, err := snappy.Decode(dst[start:], src); err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
	}
	return dst, nil
}

// recordTimestamps calls fn for each record with its absolute offset and
// timestamp, stopping when fn returns false. Records are varint-framed:
// length, attributes, timestampDelta, offsetDelta, then key, value and
// headers, which are skipped via the length.
func recordTimestamps(batch []byte, h BatchHeader, fn func(offset, ts int64) bool) error {
	recs, err := recordsSection(batch, h)
	if err != nil {
		return err
	}
	for i := int32(0); i < h.NumRecords && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || length > int64(len(recs)-n) {
			return fmt.Errorf("%w: record %d length", ErrCorruptMessage, i)
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(rec) < 1 {
			return fmt.Errorf("%w: record %d empty", ErrCorruptMessage, i)
		}
		p := 1 // attributes
		tsDelta, n := binary.Varint(rec[p:])
		if n <= 0 {
			return fmt.Errorf("%w: record %d timestamp", ErrCorruptMessage, i)
		}
		p += n
		offDelta, n := binary.Varint(rec[p:])
		if n <= 0 {
			return fmt.Errorf("%w: record %d offset", ErrCorruptMessage, i)
		}
		ts := h.FirstTimestamp + tsDelta
		if h.TimestampType() == 1 {
			ts = h.MaxTimestamp
		}
		if !fn(h.BaseOffset+offDelta, ts) {
			return nil
		}
	}
	return nil
}

// findInBatch returns the offset and timestamp of the first record in the
// batch with timestamp >= target (exact == when exact is set). ok is false
// when no record qualifies.
func findInBatch(batch []byte, h BatchHeader, target int64, exact bool) (off, ts int64, ok bool, err error) {
	if h.TimestampType() == 1 {
		if h.MaxTimestamp >= target {
			return h.BaseOffset, h.MaxTimestamp, true, nil
		}
		return 0, 0, false, nil
	}
	err = recordTimestamps(batch, h, func(o, t int64) bool {
		if (exact && t == target) || (!exact && t >= target) {
			off, ts, ok = o, t, true
			return false
		}
		return true
	})
	return off, ts, ok, err
}

package partition

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Reading the records inside a batch: the lookup path (ListOffsets by
// timestamp) and whoever else must look inside batches. The produce and
// fetch paths never decompress.
//
// Decompression is streamed and bounded: a RecordIter holds one record
// (or, skipping bodies, a few bytes of it) and the decoder's window, never
// the whole batch, and stops with ErrCorruptMessage once the batch has
// expanded past RecordsLimit, so a small batch that decompresses to
// gigabytes costs bounded memory and bounded CPU.

// maxDecompressed caps how much any one batch may expand to.
const maxDecompressed = 256 << 20

// maxRecordOverhead bounds a record's framing beyond its key and value:
// the length, attributes, timestamp and offset deltas, key and value
// lengths and header count varints.
const maxRecordOverhead = 64

// zstdMaxWindow bounds the history a zstd stream may ask the decoder to
// keep (Kafka's producers use windows of a few MiB).
const zstdMaxWindow = 64 << 20

// RecordsLimit is how far batch h may expand when its records are read:
// its declared record count times the largest record (maxRecordBytes,
// the topic's max.message.bytes, plus framing), and never more than
// maxDecompressed.
func RecordsLimit(h BatchHeader, maxRecordBytes int32) int64 {
	per := int64(max(maxRecordBytes, 0)) + maxRecordOverhead
	return min(int64(max(h.NumRecords, 0))*per, maxDecompressed)
}

// RecordIter reads the records of one batch in order, decompressing as it
// goes. It never panics on any input; a batch that ends early, frames a
// record badly, holds a record larger than maxRecordBytes or expands past
// RecordsLimit ends the iteration with an error wrapping
// ErrCorruptMessage.
type RecordIter struct {
	h         BatchHeader
	br        *bufio.Reader
	closeFn   func()
	left      int32
	maxRecord int64
	withBody  bool
	done      bool
	err       error

	// Offset and Timestamp are the current record's (the batch's
	// MaxTimestamp for LogAppendTime batches).
	Offset, Timestamp int64
	// Body is the current record after its length prefix (attributes
	// through headers), only for an iterator made withBody; it is reused
	// by Next.
	Body []byte
}

// NewRecordIter iterates the records of batch h whose bytes after the
// batch header (its records, compressed as h says) body yields. With
// withBody each record's bytes are read into Body; without, only their
// offsets and timestamps are decoded and the rest is skipped as it
// streams by. Close releases the decoder.
func NewRecordIter(h BatchHeader, body io.Reader, maxRecordBytes int32, withBody bool) (*RecordIter, error) {
	limit := RecordsLimit(h, maxRecordBytes)
	it := &RecordIter{h: h, left: h.NumRecords, maxRecord: int64(max(maxRecordBytes, 0)) + maxRecordOverhead, withBody: withBody, closeFn: func() {}}
	var src io.Reader
	switch h.Compression() {
	case CompressionNone:
		src = body
	case CompressionGzip:
		r, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorruptMessage, err)
		}
		src, it.closeFn = r, func() { r.Close() }
	case CompressionSnappy:
		r, err := newSnappyReader(body, limit)
		if err != nil {
			return nil, err
		}
		src = r
	case CompressionLZ4:
		src = lz4.NewReader(body)
	case CompressionZstd:
		d, err := zstd.NewReader(body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(uint64(max(limit, 1))))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorruptMessage, err)
		}
		src, it.closeFn = d, d.Close
	default:
		return nil, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, h.Compression())
	}
	it.br = bufio.NewReaderSize(&boundedReader{r: src, left: limit, limit: limit}, 32<<10)
	return it, nil
}

// Close releases the decoder. Idempotent.
func (it *RecordIter) Close() {
	it.closeFn()
	it.closeFn = func() {}
}

// Err is the error that ended the iteration, if any.
func (it *RecordIter) Err() error { return it.err }

func (it *RecordIter) fail(format string, args ...any) bool {
	it.err = fmt.Errorf("%w: record %d of batch at offset %d: %s", ErrCorruptMessage, it.h.NumRecords-it.left, it.h.BaseOffset, fmt.Sprintf(format, args...))
	return false
}

// Next moves to the next record, reporting false at the end of the batch
// or on an error (Err).
func (it *RecordIter) Next() bool {
	if it.err != nil {
		return false
	}
	if it.left <= 0 {
		// As Kafka's DefaultRecordBatch iterator: bytes past the declared
		// records make the batch corrupt.
		if !it.done {
			it.done = true
			if _, err := it.br.ReadByte(); err == nil {
				return it.fail("records remain past the declared count")
			} else if !errors.Is(err, io.EOF) {
				return it.fail("%v", err)
			}
		}
		return false
	}
	length, err := binary.ReadVarint(it.br)
	if err != nil {
		return it.fail("length: %v", readErr(err))
	}
	if length < 1 || length > it.maxRecord {
		return it.fail("length %d", length)
	}
	var head []byte
	var small [32]byte
	if it.withBody {
		if int64(cap(it.Body)) < length {
			it.Body = make([]byte, length)
		}
		it.Body = it.Body[:length]
		if _, err := io.ReadFull(it.br, it.Body); err != nil {
			return it.fail("body: %v", readErr(err))
		}
		head = it.Body
	} else {
		head = small[:min(length, int64(len(small)))]
		if _, err := io.ReadFull(it.br, head); err != nil {
			return it.fail("body: %v", readErr(err))
		}
		if _, err := it.br.Discard(int(length) - len(head)); err != nil {
			return it.fail("body: %v", readErr(err))
		}
	}
	p := 1 // attributes
	tsDelta, n := binary.Varint(head[p:])
	if n <= 0 {
		return it.fail("timestamp delta")
	}
	p += n
	offDelta, n := binary.Varint(head[p:])
	if n <= 0 || offDelta < 0 || offDelta > math.MaxInt32 {
		return it.fail("offset delta")
	}
	it.Offset = it.h.BaseOffset + offDelta
	it.Timestamp = it.h.FirstTimestamp + tsDelta
	if it.h.TimestampType() == 1 {
		it.Timestamp = it.h.MaxTimestamp
	}
	it.left--
	return true
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// boundedReader fails once more than limit bytes have come out of r.
type boundedReader struct {
	r           io.Reader
	left, limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: batch decompresses beyond %d bytes", ErrCorruptMessage, b.limit)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: batch decompresses beyond %d bytes", ErrCorruptMessage, b.limit)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: decompress: %v", ErrCorruptMessage, err)
	}
	return n, err
}

// xerialMagic starts snappy data framed the way the Java client's
// snappy-java SnappyOutputStream writes it; librdkafka and Go clients send
// raw snappy blocks.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// snappyReader decodes a raw snappy block (one block: its decoded length,
// checked against the limit first, is bounded by snappy's ratio to a few
// tens of times the compressed batch) or xerial-framed chunks, one chunk
// at a time.
type snappyReader struct {
	src         io.Reader // xerial chunks still to decode
	out         []byte    // decoded bytes not yet read
	limit       int64
	decoded     int64
	xerial, eof bool
	chunk       []byte
}

func newSnappyReader(body io.Reader, limit int64) (*snappyReader, error) {
	br := bufio.NewReader(body)
	head, _ := br.Peek(16)
	r := &snappyReader{src: br, limit: limit}
	if len(head) >= len(xerialMagic) && bytes.Equal(head[:len(xerialMagic)], xerialMagic) {
		if len(head) < 16 {
			return nil, fmt.Errorf("%w: xerial header truncated", ErrCorruptMessage)
		}
		br.Discard(16) // magic(8) version(4) compatible(4)
		r.xerial = true
		return r, nil
	}
	// A raw block is the whole (already bounded) batch body.
	b, err := io.ReadAll(br)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
	}
	if err := r.decode(b); err != nil {
		return nil, err
	}
	r.eof = true
	return r, nil
}

func (r *snappyReader) decode(b []byte) error {
	n, err := snappy.DecodedLen(b)
	if err != nil || n < 0 || r.decoded+int64(n) > r.limit {
		return fmt.Errorf("%w: snappy block of %d bytes (limit %d)", ErrCorruptMessage, n, r.limit-r.decoded)
	}
	if cap(r.out) < n {
		r.out = make([]byte, n)
	}
	out, err := snappy.Decode(r.out[:n], b)
	if err != nil {
		return fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
	}
	r.out = out
	r.decoded += int64(n)
	return nil
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.eof || !r.xerial {
			return 0, io.EOF
		}
		var lb [4]byte
		if _, err := io.ReadFull(r.src, lb[:]); err != nil {
			if errors.Is(err, io.EOF) {
				r.eof = true
				return 0, io.EOF
			}
			return 0, fmt.Errorf("%w: xerial chunk header: %v", ErrCorruptMessage, err)
		}
		n := int64(binary.BigEndian.Uint32(lb[:]))
		if n > int64(maxDecompressed) {
			return 0, fmt.Errorf("%w: xerial chunk length %d", ErrCorruptMessage, n)
		}
		// The chunk is read as it arrives, not allocated from its
		// length prefix.
		chunk := bytes.NewBuffer(r.chunk[:0])
		if m, err := io.Copy(chunk, io.LimitReader(r.src, n)); err != nil || m != n {
			return 0, fmt.Errorf("%w: xerial chunk truncated", ErrCorruptMessage)
		}
		r.chunk = chunk.Bytes()
		if err := r.decode(r.chunk); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// Record parses the current record of an iterator made withBody: its key,
// value (nil when null) and headers, copied out of Body. TimestampDelta
// is left 0; the record's timestamp is Timestamp.
func (it *RecordIter) Record() (Record, error) {
	var r Record
	if !it.withBody {
		return r, fmt.Errorf("%w: record bodies were not read", ErrCorruptMessage)
	}
	rd := varintReader{b: it.Body, ok: true}
	rd.byte()   // attributes
	rd.varint() // timestamp delta
	rd.varint() // offset delta
	r.Key = rd.bytes()
	r.Value = rd.bytes()
	if n := rd.varint(); n > 0 && n <= int64(len(rd.b)) {
		r.Headers = make([]RecordHeader, 0, n)
		for i := int64(0); i < n && rd.ok; i++ {
			k := rd.bytes()
			r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: rd.bytes()})
		}
	} else if n != 0 {
		rd.ok = false
	}
	if !rd.ok {
		return Record{}, fmt.Errorf("%w: record at offset %d is truncated", ErrCorruptMessage, it.Offset)
	}
	return r, nil
}

// varintReader reads a record's fields; ok turns false, for good, on the
// first field that does not fit.
type varintReader struct {
	b  []byte
	ok bool
}

func (r *varintReader) byte() {
	if len(r.b) < 1 {
		r.b, r.ok = nil, false
		return
	}
	r.b = r.b[1:]
}

func (r *varintReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.b, r.ok = nil, false
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a varint-length-prefixed field, copied; nil for length -1.
func (r *varintReader) bytes() []byte {
	n := r.varint()
	switch {
	case !r.ok || n < -1 || n > int64(len(r.b)):
		r.b, r.ok = nil, false
		return nil
	case n == -1:
		return nil
	}
	v := append(make([]byte, 0, n), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

// ControlMarker is what a transaction marker says.
type ControlMarker struct {
	// Commit is the outcome; a marker whose type cannot be read is an
	// abort, the outcome that exposes nothing.
	Commit bool
	// CoordinatorEpoch is the epoch of the coordinator that wrote it, 0
	// if unreadable.
	CoordinatorEpoch int32
}

// ReadControlMarker reads the marker in control batch batch (its first
// record, never compressed); ok is false if any of it was unreadable.
func ReadControlMarker(batch []byte) (m ControlMarker, ok bool) {
	if len(batch) <= BatchHeaderSize {
		return m, false
	}
	r := varintReader{b: batch[BatchHeaderSize:], ok: true}
	r.varint() // length
	r.byte()   // attributes
	r.varint() // timestamp delta
	r.varint() // offset delta
	key := r.bytes()
	typeOK := r.ok && len(key) >= 4
	m.Commit = typeOK && int16(binary.BigEndian.Uint16(key[2:])) == controlCommit
	val := r.bytes()
	epochOK := r.ok && len(val) >= 6
	if epochOK {
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(val[2:]))
	}
	return m, typeOK && epochOK
}

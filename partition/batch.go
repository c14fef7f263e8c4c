package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Record batch v2 layout (KIP-98), byte offsets within a batch.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offFirstTimestamp       = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offNumRecords           = 57

	// BatchHeaderSize is the size of a v2 record batch header; records follow it.
	BatchHeaderSize = 61
	// logOverhead is the baseOffset and batchLength prefix that batchLength
	// does not count.
	logOverhead = 12
	// minBatchLength is the smallest legal batchLength: a header without records.
	minBatchLength = BatchHeaderSize - logOverhead

	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codecs as stored in the attributes.
const (
	CompressionNone   int8 = 0
	CompressionGzip   int8 = 1
	CompressionSnappy int8 = 2
	CompressionLZ4    int8 = 3
	CompressionZstd   int8 = 4
)

// Sentinel errors. Errors returned by this package wrap them; each wraps
// the Kafka error it answers as.
var (
	// ErrCorruptMessage: CORRUPT_MESSAGE (2). Bad CRC, bad length, torn data.
	ErrCorruptMessage = kafkaerr.New(kerr.CorruptMessage, "corrupt message")
	// ErrInvalidRecord: INVALID_RECORD (87). Structurally sound but
	// inconsistent (record count vs offset delta, sequence without producer).
	ErrInvalidRecord = kafkaerr.New(kerr.InvalidRecord, "invalid record")
	// ErrMessageTooLarge: MESSAGE_TOO_LARGE (10). A batch exceeds max.message.bytes.
	ErrMessageTooLarge = kafkaerr.New(kerr.MessageTooLarge, "message too large")
	// ErrRecordListTooLarge: RECORD_LIST_TOO_LARGE (18). An append larger
	// than segment.bytes can never fit in a segment.
	ErrRecordListTooLarge = kafkaerr.New(kerr.RecordListTooLarge, "record list too large")
	// ErrOffsetOutOfRange: OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = kafkaerr.New(kerr.OffsetOutOfRange, "offset out of range")
	// ErrUnsupportedMagic is returned for batches whose magic is not 2. Kafka
	// (ProduceRequest.validateRecords, produce v3+) answers INVALID_RECORD
	// for magic 0 and 1, so those errors also wrap ErrInvalidRecord; a magic
	// above 2 is unparseable and also wraps ErrCorruptMessage. Handlers
	// should test ErrCorruptMessage/ErrInvalidRecord before this one.
	ErrUnsupportedMagic = kafkaerr.New(kerr.UnsupportedForMessageFormat, "unsupported record batch magic")
	// ErrUnsupportedCompression: UNSUPPORTED_COMPRESSION_TYPE (76), codec ids 5-7.
	ErrUnsupportedCompression = kafkaerr.New(kerr.UnsupportedCompressionType, "unsupported compression type")
	// ErrOffsetsOutOfOrder is returned by AppendAsFollower when the batches
	// are not strictly increasing or start below the log end offset.
	// Kafka's follower path treats this as a fatal replica error.
	ErrOffsetsOutOfOrder = errors.New("offsets out of order")
	// ErrLogClosed is returned by operations on a closed log.
	ErrLogClosed = kafkaerr.New(kerr.NotLeaderForPartition, "log closed")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed 61-byte header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the batch's size in bytes on the wire and on disk.
func (h BatchHeader) Size() int { return logOverhead + int(h.BatchLength) }

// Compression returns the codec id (attributes & 7).
func (h BatchHeader) Compression() int8 { return int8(h.Attributes & attrCompressionMask) }

// IsTransactional reports the transactional attribute bit.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports the control-batch attribute bit (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// TimestampType is 0 for CreateTime and 1 for LogAppendTime.
func (h BatchHeader) TimestampType() int8 {
	if h.Attributes&attrTimestampType != 0 {
		return 1
	}
	return 0
}

// ParseBatchHeader parses the header at the start of b. It checks only that
// the header is present and that the magic is 2; it does not look at the
// CRC or at the records.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) <= offMagic {
		return BatchHeader{}, fmt.Errorf("%w: batch header truncated (%d bytes)", ErrCorruptMessage, len(b))
	}
	if err := checkMagic(int8(b[offMagic])); err != nil {
		return BatchHeader{}, err
	}
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: batch header truncated (%d bytes)", ErrCorruptMessage, len(b))
	}
	return parseHeaderUnchecked(b), nil
}

func checkMagic(m int8) error {
	switch {
	case m == 2:
		return nil
	case m == 0 || m == 1:
		return fmt.Errorf("%w %d: %w", ErrUnsupportedMagic, m, ErrInvalidRecord)
	default:
		return fmt.Errorf("%w %d: %w", ErrUnsupportedMagic, m, ErrCorruptMessage)
	}
}

func parseHeaderUnchecked(b []byte) BatchHeader {
	_ = b[BatchHeaderSize-1]
	return BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
}

// batchCRC computes the CRC-32C a v2 batch carries: attributes to the end.
func batchCRC(batch []byte) uint32 {
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

// ValidateBatches checks a produce payload: a sequence of whole v2 batches
// with nothing trailing. Per batch, in Kafka's order
// (UnifiedLog.analyzeAndValidateRecords, then LogValidator):
//   - length sane and within b, else ErrCorruptMessage;
//   - magic 2, else ErrUnsupportedMagic (see its doc for the code);
//   - size <= maxMessageBytes, else ErrMessageTooLarge;
//   - CRC-32C over attributes..end equals the CRC field, else ErrCorruptMessage;
//   - compression codec known, else ErrUnsupportedCompression;
//   - NumRecords >= 1 and LastOffsetDelta+1 == NumRecords, else
//     ErrInvalidRecord.
//
// A client's batch must also pass CheckClientBatch; the transaction
// coordinator's writes (markers, transactional offset commits) and
// replicated copies of them need not.
//
// It never decompresses and never panics. Kafka also insists on exactly one
// batch per produce request (v3+); that rule belongs to the handler.
func ValidateBatches(b []byte, maxMessageBytes int32) ([]BatchHeader, error) {
	return validateBatches(b, maxMessageBytes, false)
}

// ValidateReplicatedBatches checks batches copied from a leader (or read
// back from a log): as ValidateBatches, except that a batch may hold fewer
// records than its offset range (compaction removes records but keeps a
// batch's offsets) or none at all (compaction keeps a producer's last
// batch empty, as Kafka does).
func ValidateReplicatedBatches(b []byte, maxMessageBytes int32) ([]BatchHeader, error) {
	return validateBatches(b, maxMessageBytes, true)
}

func validateBatches(b []byte, maxMessageBytes int32, compacted bool) ([]BatchHeader, error) {
	var hdrs []BatchHeader
	for pos := 0; pos < len(b); {
		h, size, err := validateOne(b[pos:], maxMessageBytes, compacted)
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		hdrs = append(hdrs, h)
		pos += size
	}
	if len(hdrs) == 0 {
		return nil, fmt.Errorf("%w: no record batches", ErrInvalidRecord)
	}
	return hdrs, nil
}

func validateOne(b []byte, maxMessageBytes int32, compacted bool) (BatchHeader, int, error) {
	size, err := frameSize(b)
	if err != nil {
		return BatchHeader{}, 0, err
	}
	if err := checkMagic(int8(b[offMagic])); err != nil {
		return BatchHeader{}, 0, err
	}
	if int64(size) > int64(maxMessageBytes) {
		return BatchHeader{}, 0, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, maxMessageBytes)
	}
	batch := b[:size]
	h := parseHeaderUnchecked(batch)
	if got := batchCRC(batch); got != h.CRC {
		return BatchHeader{}, 0, fmt.Errorf("%w: crc mismatch (stored %08x, computed %08x)", ErrCorruptMessage, h.CRC, got)
	}
	if c := h.Compression(); c > CompressionZstd {
		return BatchHeader{}, 0, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, c)
	}
	if compacted {
		if h.NumRecords < 0 || h.LastOffsetDelta < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
			return BatchHeader{}, 0, fmt.Errorf("%w: record count %d does not fit last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
		}
		return h, size, nil
	}
	if h.NumRecords < 1 || h.LastOffsetDelta < 0 || int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return BatchHeader{}, 0, fmt.Errorf("%w: record count %d does not match last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	}

	return h, size, nil
}

// frameSize returns the size of the batch starting at b, checking only that
// the length field is sane and the whole batch is present.
func frameSize(b []byte) (int, error) {
	if len(b) < logOverhead+5 { // through the magic byte
		return 0, fmt.Errorf("%w: %d trailing bytes", ErrCorruptMessage, len(b))
	}
	bl := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if bl < minBatchLength {
		return 0, fmt.Errorf("%w: batch length %d below minimum %d", ErrCorruptMessage, bl, minBatchLength)
	}
	size := int64(logOverhead) + int64(bl)
	if size > int64(len(b)) {
		return 0, fmt.Errorf("%w: batch length %d exceeds the %d bytes present", ErrCorruptMessage, bl, len(b))
	}
	return int(size), nil
}

// splitBatches walks b as a sequence of v2 batches without checking CRCs,
// for input that was already validated (or comes off our own disk).
func splitBatches(b []byte) ([]BatchHeader, error) {
	var hdrs []BatchHeader
	for pos := 0; pos < len(b); {
		size, err := frameSize(b[pos:])
		if err != nil {
			return nil, err
		}
		if err := checkMagic(int8(b[pos+offMagic])); err != nil {
			return nil, err
		}
		h := parseHeaderUnchecked(b[pos:])
		if h.NumRecords < 1 || h.LastOffsetDelta < 0 {
			return nil, fmt.Errorf("%w: empty batch", ErrInvalidRecord)
		}
		hdrs = append(hdrs, h)
		pos += size
	}
	if len(hdrs) == 0 {
		return nil, fmt.Errorf("%w: no record batches", ErrInvalidRecord)
	}
	return hdrs, nil
}

// setBaseOffsetAndEpoch rewrites the two header fields the CRC does not cover.
func setBaseOffsetAndEpoch(batch []byte, base int64, epoch int32) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(batch[offPartitionLeaderEpoch:], uint32(epoch))
}

// setLogAppendTime does what Kafka's DefaultRecordBatch.setMaxTimestamp does
// for message.timestamp.type=LogAppendTime: set the timestamp-type bit and
// MaxTimestamp (FirstTimestamp and the records are untouched; readers take
// every record's timestamp from MaxTimestamp) and recompute the CRC.
func setLogAppendTime(batch []byte, now int64) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	cur := int64(binary.BigEndian.Uint64(batch[offMaxTimestamp:]))
	if attrs&attrTimestampType != 0 && cur == now {
		return
	}
	binary.BigEndian.PutUint16(batch[offAttributes:], attrs|attrTimestampType)
	binary.BigEndian.PutUint64(batch[offMaxTimestamp:], uint64(now))
	binary.BigEndian.PutUint32(batch[offCRC:], batchCRC(batch))
}

func crc32UpdateTable(c uint32, b []byte) uint32 { return crc32.Update(c, castagnoli, b) }

// CheckClientBatch is the rule Kafka's LogValidator applies to batches from
// clients only: a producer id never comes with a negative base sequence.
// The transaction coordinator writes such batches (control markers,
// TxnOffsetCommit records), so it is not part of ValidateBatches.
func CheckClientBatch(h BatchHeader) error {
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidRecord, h.ProducerID, h.BaseSequence)
	}
	return nil
}

package partition

import (
	"encoding/binary"
)

// Building record batches: the coordinators' records (__consumer_offsets,
// __transaction_state) and the transaction markers are written in the
// same magic v2 format the log stores, built here rather than by hand in
// each writer.

// Record is one record to build into a batch.
type Record struct {
	// Key and Value are the record's; a nil one is written as null (a nil
	// Value is a tombstone), an empty one as empty.
	Key, Value []byte
	// Headers are the record's headers, in order.
	Headers []RecordHeader
	// TimestampDelta is the record's timestamp less the batch's first.
	TimestampDelta int64
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte
}

// BatchBuilder encodes records as one uncompressed magic v2 record batch.
// The base offset and partition leader epoch are left for the log to set
// (0 and -1); the CRC-32C covers attributes to the end, so setting them
// later does not invalidate it. The zero value is not ready: NewBatchBuilder
// sets the producer fields to Kafka's "none" (-1).
type BatchBuilder struct {
	// FirstTimestamp is the batch's first timestamp; its max timestamp is
	// FirstTimestamp plus the largest record timestamp delta.
	FirstTimestamp int64
	// ProducerID, ProducerEpoch and BaseSequence are the producer's, -1
	// when there is none.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional sets the transactional attribute; Control the control
	// attribute (a transaction marker, see ControlRecord).
	Transactional bool
	Control       bool

	records  []byte
	n        int32
	maxDelta int64
}

// NewBatchBuilder returns a builder for a batch with no producer whose
// first timestamp is firstTimestamp.
func NewBatchBuilder(firstTimestamp int64) *BatchBuilder {
	return &BatchBuilder{FirstTimestamp: firstTimestamp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// Add appends a record; its offset delta is its position in the batch.
func (b *BatchBuilder) Add(r Record) *BatchBuilder {
	var body []byte
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, r.TimestampDelta)
	body = binary.AppendVarint(body, int64(b.n)) // offset delta
	body = appendVarintBytes(body, r.Key)
	body = appendVarintBytes(body, r.Value)
	body = binary.AppendVarint(body, int64(len(r.Headers)))
	for _, h := range r.Headers {
		body = appendVarintBytes(body, []byte(h.Key))
		body = appendVarintBytes(body, h.Value)
	}
	b.records = binary.AppendVarint(b.records, int64(len(body)))
	b.records = append(b.records, body...)
	if b.n == 0 || r.TimestampDelta > b.maxDelta {
		b.maxDelta = r.TimestampDelta
	}
	b.n++
	return b
}

// Build returns the batch's bytes, CRC included.
func (b *BatchBuilder) Build() []byte {
	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(b.records))
	be := binary.BigEndian
	be.PutUint64(out[offBaseOffset:], 0)
	be.PutUint32(out[offBatchLength:], uint32(BatchHeaderSize-12+len(b.records)))
	be.PutUint32(out[offPartitionLeaderEpoch:], 0xffffffff)
	out[offMagic] = 2
	var attrs uint16
	if b.Transactional {
		attrs |= attrTransactional
	}
	if b.Control {
		attrs |= attrControl
	}
	be.PutUint16(out[offAttributes:], attrs)
	be.PutUint32(out[offLastOffsetDelta:], uint32(b.n-1))
	be.PutUint64(out[offFirstTimestamp:], uint64(b.FirstTimestamp))
	be.PutUint64(out[offMaxTimestamp:], uint64(b.FirstTimestamp+b.maxDelta))
	be.PutUint64(out[offProducerID:], uint64(b.ProducerID))
	be.PutUint16(out[offProducerEpoch:], uint16(b.ProducerEpoch))
	be.PutUint32(out[offBaseSequence:], uint32(b.BaseSequence))
	be.PutUint32(out[offNumRecords:], uint32(b.n))
	out = append(out, b.records...)
	be.PutUint32(out[offCRC:], batchCRC(out))
	return out
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// Control record types (the key's second int16).
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// ControlRecord is a transaction marker's one record: its key is {version
// int16 0, type int16} (0 abort, 1 commit) and its value {version int16 0,
// coordinator epoch int32}.
func ControlRecord(commit bool, coordinatorEpoch int32) Record {
	typ := controlAbort
	if commit {
		typ = controlCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	val := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	return Record{Key: key, Value: val}
}

// ControlBatch is a transaction marker for producer pid at epoch: a
// transactional control batch holding ControlRecord.
func ControlBatch(pid int64, epoch int16, coordinatorEpoch int32, commit bool, timestampMs int64) []byte {
	b := NewBatchBuilder(timestampMs)
	b.ProducerID, b.ProducerEpoch = pid, epoch
	b.Transactional, b.Control = true, true
	return b.Add(ControlRecord(commit, coordinatorEpoch)).Build()
}

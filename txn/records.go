package txn

// The records of __transaction_state, in Kafka's formats so that tools
// reading the topic recognise them:
//
//	key:   TransactionLogKey   {version int16 (0), transactional id string}
//	value: TransactionLogValue {version int16, producer id int64, epoch int16,
//	       timeout int32, state int8, partitions [topic, [partition]],
//	       last update ms int64, start ms int64}
//
// Values are written at version 0, as Kafka 3.x does; version 1 (flexible,
// with tagged fields) is read too. A null value is a tombstone.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/partition"
)

var errBadRecord = errors.New("malformed __transaction_state record")

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = 0
	k.TransactionalID = id
	return k.AppendTo(nil)
}

func decodeKey(b []byte) (string, bool, error) {
	if len(b) < 2 {
		return "", false, fmt.Errorf("%w: key too short", errBadRecord)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != 0 {
		// A newer key version: not something this coordinator writes.
		return "", false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(b); err != nil {
		return "", false, fmt.Errorf("%w: key: %v", errBadRecord, err)
	}
	return k.TransactionalID, true, nil
}

func encodeValue(m meta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID = m.producerID
	v.ProducerEpoch = m.epoch
	v.TimeoutMillis = m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	byTopic := map[string]int{}
	for _, tp := range m.sortedPartitions() {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(v.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			v.Topics = append(v.Topics, t)
		}
		v.Topics[i].Partitions = append(v.Topics[i].Partitions, tp.Partition)
	}
	v.LastUpdateTimestamp = m.updateMs
	v.StartTimestamp = m.startMs
	return v.AppendTo(nil)
}

func decodeValue(id string, b []byte) (meta, error) {
	var v kmsg.TxnMetadataValue
	if len(b) >= 2 {
		v.Version = int16(binary.BigEndian.Uint16(b))
	}
	if v.Version < 0 || v.Version > 1 {
		return meta{}, fmt.Errorf("%w: value version %d", errBadRecord, v.Version)
	}
	if err := v.ReadFrom(b); err != nil {
		return meta{}, fmt.Errorf("%w: value: %v", errBadRecord, err)
	}
	m := meta{
		id: id, producerID: v.ProducerID, lastProducerID: -1, epoch: v.ProducerEpoch, lastEpoch: noEpoch,
		timeoutMs: v.TimeoutMillis, state: State(v.State), partitions: map[TopicPartition]bool{},
		startMs: v.StartTimestamp, updateMs: v.LastUpdateTimestamp,
	}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		m.lastProducerID = v.PreviousProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{Topic: t.Topic, Partition: p}] = true
		}
	}
	return m, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes one record as an uncompressed magic v2 batch; the
// log sets the base offset and leader epoch, which the CRC does not cover.
func buildBatch(key, value []byte, timestampMs int64) []byte {
	var r []byte
	r = append(r, 0)
	r = kbin.AppendVarlong(r, 0)
	r = kbin.AppendVarint(r, 0)
	r = kbin.AppendVarintBytes(r, key)
	if value == nil {
		r = kbin.AppendVarint(r, -1)
	} else {
		r = kbin.AppendVarintBytes(r, value)
	}
	r = kbin.AppendVarint(r, 0)
	body := kbin.AppendVarint(nil, int32(len(r)))
	body = append(body, r...)
	b := make([]byte, partition.BatchHeaderSize, partition.BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(partition.BatchHeaderSize-12+len(body)))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	be.PutUint64(b[27:], uint64(timestampMs))
	be.PutUint64(b[35:], uint64(timestampMs))
	be.PutUint64(b[43:], 0xffffffffffffffff)
	be.PutUint16(b[51:], 0xffff)
	be.PutUint32(b[53:], 0xffffffff)
	be.PutUint32(b[57:], 1)
	b = append(b, body...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// parseBatches calls fn for every record of the uncompressed, non-control
// batches in b and returns the offset after the last whole batch. A batch
// holding a malformed record is reported to bad with its offset and the
// rest of it skipped; the batches after it are still read.
func parseBatches(b []byte, fn func(offset int64, key, value []byte), bad func(offset int64, err error)) (next int64, skipped int, err error) {
	next = -1
	for len(b) >= partition.BatchHeaderSize {
		h, err := partition.ParseBatchHeader(b)
		if err != nil {
			return next, skipped, err
		}
		size := h.Size()
		if size < partition.BatchHeaderSize || size > len(b) {
			break
		}
		batch := b[:size]
		b = b[size:]
		next = h.NextOffset()
		if h.IsControl() {
			continue
		}
		if h.Compression() != partition.CompressionNone {
			skipped++
			continue
		}
		if err := parseRecords(batch, h, fn); err != nil {
			bad(h.BaseOffset, err)
		}
	}
	return next, skipped, nil
}

func parseRecords(batch []byte, h partition.BatchHeader, fn func(offset int64, key, value []byte)) error {
	r := kbin.Reader{Src: batch[partition.BatchHeaderSize:]}
	for i := int32(0); i < h.NumRecords; i++ {
		length := r.Varint()
		if !r.Ok() || length < 0 || int(length) > len(r.Src) {
			return fmt.Errorf("%w: record %d length at batch %d", errBadRecord, i, h.BaseOffset)
		}
		rr := kbin.Reader{Src: r.Span(int(length))}
		rr.Int8()
		rr.Varlong()
		delta := rr.Varint()
		key := rr.VarintBytes()
		var value []byte
		if vl := rr.Varint(); vl >= 0 {
			value = rr.Span(int(vl))
			if value == nil {
				value = []byte{}
			}
		}
		if !rr.Ok() {
			return fmt.Errorf("%w: record %d truncated at batch %d", errBadRecord, i, h.BaseOffset)
		}
		var v []byte // nil for a tombstone
		if value != nil {
			v = append(make([]byte, 0, len(value)), value...)
		}
		fn(h.BaseOffset+int64(delta), append([]byte(nil), key...), v)
	}
	return nil
}

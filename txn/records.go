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

// buildBatch encodes one record as an uncompressed magic v2 batch
// (partition.BatchBuilder); the log sets its base offset and leader epoch.
func buildBatch(key, value []byte, timestampMs int64) []byte {
	return partition.NewBatchBuilder(timestampMs).Add(partition.Record{Key: key, Value: value}).Build()
}

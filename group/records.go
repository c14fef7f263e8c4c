package group

// The records of __consumer_offsets, in Kafka's own formats so that tools
// reading the topic (kafka-console-consumer's formatters, kcat, kmsg's
// OffsetCommitKey/GroupMetadataValue) recognise them:
//
//	key version 0/1: OffsetCommitKey   {version int16, group, topic string, partition int32}
//	key version 2:   GroupMetadataKey  {version int16, group string}
//	key version 3-8:  a consumer-protocol group's records (records_consumer.go)
//	key version 9-15: a share group's records (records_share.go)
//	key version 16+:  other records of Kafka 4's coordinator; skipped
//
// A null value is a tombstone: the offset or the group is gone.
// OffsetCommitValue is written at v3 (Kafka 2.1+), or v1 when the commit
// carries an explicit expire timestamp (OffsetCommit v2-v4 retention time),
// exactly as Kafka 3.x chooses. GroupMetadataValue is written at v3 (KIP-345,
// static members). Reading accepts every version Kafka ever wrote: values
// v0-v4 of both, including the flexible v4 encodings.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/gokafka/gokafka/partition"
)

// errBadRecord marks a record of __consumer_offsets that cannot be decoded.
var errBadRecord = errors.New("malformed __consumer_offsets record")

// OffsetAndMetadata is one committed offset.
type OffsetAndMetadata struct {
	Offset int64
	// LeaderEpoch is the leader epoch of the committed record, -1 if unknown.
	LeaderEpoch int32
	Metadata    string
	// CommitTimestamp is when the commit happened (ms).
	CommitTimestamp int64
	// ExpireTimestamp is an explicit expiry (ms) from a v2-v4 commit's
	// retention time, -1 for none (offsets.retention.minutes applies).
	ExpireTimestamp int64
}

// TopicPartition names a partition whose offset a group commits.
type TopicPartition = partition.TopicPartition

// groupValue is the persisted state of a group (GroupMetadataValue).
type groupValue struct {
	ProtocolType          string
	Generation            int32
	Protocol              *string
	Leader                *string
	CurrentStateTimestamp int64
	Members               []memberValue
}

type memberValue struct {
	MemberID           string
	InstanceID         *string
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	SessionTimeoutMs   int32
	Subscription       []byte
	Assignment         []byte
}

// record is one key/value pair for __consumer_offsets; a nil value is a
// tombstone.
type record struct {
	key, value []byte
}

func offsetKey(group string, tp TopicPartition) []byte {
	b := kbin.AppendInt16(nil, 1)
	b = kbin.AppendString(b, group)
	b = kbin.AppendString(b, tp.Topic)
	return kbin.AppendInt32(b, tp.Partition)
}

func groupKey(group string) []byte {
	b := kbin.AppendInt16(nil, 2)
	return kbin.AppendString(b, group)
}

func encodeOffsetValue(o OffsetAndMetadata) []byte {
	if o.ExpireTimestamp >= 0 {
		b := kbin.AppendInt16(nil, 1)
		b = kbin.AppendInt64(b, o.Offset)
		b = kbin.AppendString(b, o.Metadata)
		b = kbin.AppendInt64(b, o.CommitTimestamp)
		return kbin.AppendInt64(b, o.ExpireTimestamp)
	}
	b := kbin.AppendInt16(nil, 3)
	b = kbin.AppendInt64(b, o.Offset)
	b = kbin.AppendInt32(b, o.LeaderEpoch)
	b = kbin.AppendString(b, o.Metadata)
	return kbin.AppendInt64(b, o.CommitTimestamp)
}

func encodeGroupValue(v *groupValue) []byte {
	b := kbin.AppendInt16(nil, 3)
	b = kbin.AppendString(b, v.ProtocolType)
	b = kbin.AppendInt32(b, v.Generation)
	b = kbin.AppendNullableString(b, v.Protocol)
	b = kbin.AppendNullableString(b, v.Leader)
	b = kbin.AppendInt64(b, v.CurrentStateTimestamp)
	b = kbin.AppendArrayLen(b, len(v.Members))
	for i := range v.Members {
		m := &v.Members[i]
		b = kbin.AppendString(b, m.MemberID)
		b = kbin.AppendNullableString(b, m.InstanceID)
		b = kbin.AppendString(b, m.ClientID)
		b = kbin.AppendString(b, m.ClientHost)
		b = kbin.AppendInt32(b, m.RebalanceTimeoutMs)
		b = kbin.AppendInt32(b, m.SessionTimeoutMs)
		b = kbin.AppendBytes(b, m.Subscription)
		b = kbin.AppendBytes(b, m.Assignment)
	}
	return b
}

// decodedKey is a parsed key: an offset key (isOffset), a consumer
// group's record (consumer) or a classic group key.
type decodedKey struct {
	isOffset bool
	consumer bool
	share    bool
	group    string
	tp       TopicPartition
}

// decodeKey parses a key; ok is false for key versions gokafka does not
// read (those of Kafka's newer coordinator records).
func decodeKey(b []byte) (k decodedKey, ok bool, err error) {
	r := kbin.Reader{Src: b}
	version := r.Int16()
	switch version {
	case 0, 1:
		k.isOffset = true
		k.group = r.String()
		k.tp.Topic = r.String()
		k.tp.Partition = r.Int32()
	case 2:
		k.group = r.String()
	case recConsumerGroupMetadata, recConsumerGroupPartitionMetadata, recConsumerGroupMemberMetadata,
		recConsumerGroupTargetMetadata, recConsumerGroupTargetMember, recConsumerGroupCurrentAssignment,
		recShareGroupPartitionMetadata, recShareGroupMemberMetadata, recShareGroupMetadata, recShareGroupTargetMetadata,
		recShareGroupTargetMember, recShareGroupCurrentAssignment, recShareGroupStatePartitionMetadata:
		ck, err := parseRecordKey(b)
		if err != nil {
			return k, false, err
		}
		k.consumer, k.share, k.group = isConsumerRecordType(version), isShareRecordType(version), ck.group
		return k, true, nil
	default:
		if !r.Ok() {
			return k, false, fmt.Errorf("%w: key too short", errBadRecord)
		}
		return k, false, nil
	}
	if err := r.Complete(); err != nil {
		return k, false, fmt.Errorf("%w: key v%d: %v", errBadRecord, version, err)
	}
	return k, true, nil
}

func decodeOffsetValue(b []byte) (OffsetAndMetadata, error) {
	r := kbin.Reader{Src: b}
	version := r.Int16()
	o := OffsetAndMetadata{LeaderEpoch: -1, ExpireTimestamp: -1}
	if version < 0 || version > 4 {
		return o, fmt.Errorf("%w: offset value version %d", errBadRecord, version)
	}
	o.Offset = r.Int64()
	if version >= 3 {
		o.LeaderEpoch = r.Int32()
	}
	if version >= 4 {
		o.Metadata = r.CompactString()
	} else {
		o.Metadata = r.String()
	}
	o.CommitTimestamp = r.Int64()
	if version == 1 {
		o.ExpireTimestamp = r.Int64()
	}
	if version >= 4 {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return o, fmt.Errorf("%w: offset value v%d: %v", errBadRecord, version, err)
	}
	return o, nil
}

func decodeGroupValue(b []byte) (*groupValue, error) {
	r := kbin.Reader{Src: b}
	version := r.Int16()
	if version < 0 || version > 4 {
		return nil, fmt.Errorf("%w: group value version %d", errBadRecord, version)
	}
	flex := version >= 4
	str := func() string {
		if flex {
			return r.CompactString()
		}
		return r.String()
	}
	nstr := func() *string {
		if flex {
			return r.CompactNullableString()
		}
		return r.NullableString()
	}
	bytes := func() []byte {
		var v []byte
		if flex {
			v = r.CompactBytes()
		} else {
			v = r.Bytes()
		}
		return append([]byte{}, v...)
	}
	v := &groupValue{CurrentStateTimestamp: -1}
	v.ProtocolType = str()
	v.Generation = r.Int32()
	v.Protocol = nstr()
	v.Leader = nstr()
	if version >= 2 {
		v.CurrentStateTimestamp = r.Int64()
	}
	var n int32
	if flex {
		n = r.CompactArrayLen()
	} else {
		n = r.ArrayLen()
	}
	// Every member takes at least 14 bytes; a count beyond that is corrupt
	// and must not size an allocation.
	if n < 0 || int(n) > len(b)/14 {
		return nil, fmt.Errorf("%w: group value member count %d", errBadRecord, n)
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		m := memberValue{RebalanceTimeoutMs: -1}
		m.MemberID = str()
		if version >= 3 {
			m.InstanceID = nstr()
		}
		m.ClientID = str()
		m.ClientHost = str()
		if version >= 1 {
			m.RebalanceTimeoutMs = r.Int32()
		}
		m.SessionTimeoutMs = r.Int32()
		m.Subscription = bytes()
		m.Assignment = bytes()
		if flex {
			skipTags(&r)
		}
		if m.RebalanceTimeoutMs < 0 {
			// v0 had no rebalance timeout; Kafka used the session timeout.
			m.RebalanceTimeoutMs = m.SessionTimeoutMs
		}
		v.Members = append(v.Members, m)
	}
	if flex {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: group value v%d: %v", errBadRecord, version, err)
	}
	return v, nil
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// buildBatch encodes records as one uncompressed magic v2 record batch
// (partition.BatchBuilder); the log sets its base offset and leader epoch.
func buildBatch(recs []record, timestampMs int64) []byte {
	return buildProducerBatch(recs, timestampMs, -1, -1)
}

// buildProducerBatch is buildBatch for a transactional producer's offset
// commit (TxnOffsetCommit): the batch carries the producer's id and epoch
// and the transactional flag, and no sequence, as Kafka writes it; the
// transaction's marker later decides whether its offsets count. A pid of
// -1 builds a plain batch.
func buildProducerBatch(recs []record, timestampMs int64, pid int64, epoch int16) []byte {
	b := partition.NewBatchBuilder(timestampMs)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.Transactional = pid, epoch, true
	}
	for _, r := range recs {
		b.Add(partition.Record{Key: r.key, Value: r.value})
	}
	return b.Build()
}

package group

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/partition"
)

func strp(s string) *string { return &s }

func TestOffsetRecordRoundTripAndKafkaFormat(t *testing.T) {
	tp := TopicPartition{Topic: "orders", Partition: 7}
	for _, o := range []OffsetAndMetadata{
		{Offset: 42, LeaderEpoch: 3, Metadata: "meta", CommitTimestamp: 1700000000000, ExpireTimestamp: -1},
		{Offset: 43, LeaderEpoch: -1, Metadata: "", CommitTimestamp: 1700000000001, ExpireTimestamp: 1700000360000},
	} {
		k, ok, err := decodeKey(offsetKey("grp", tp))
		if err != nil || !ok || !k.isOffset || k.group != "grp" || k.tp != tp {
			t.Fatalf("key round trip: %+v %v %v", k, ok, err)
		}
		val := encodeOffsetValue(o)
		got, err := decodeOffsetValue(val)
		want := o
		if o.ExpireTimestamp >= 0 {
			// v1 carries no leader epoch.
			want.LeaderEpoch = -1
		}
		if err != nil || got != want {
			t.Fatalf("value round trip: %+v, %v; want %+v", got, err, want)
		}
		// Tools decode the records with Kafka's schemas (kmsg's copies).
		var kk kmsg.OffsetCommitKey
		if err := kk.ReadFrom(offsetKey("grp", tp)); err != nil || kk.Group != "grp" || kk.Topic != "orders" || kk.Partition != 7 {
			t.Fatalf("kmsg key: %+v %v", kk, err)
		}
		var kv kmsg.OffsetCommitValue
		if err := kv.ReadFrom(val); err != nil || kv.Offset != o.Offset || kv.Metadata != o.Metadata || kv.CommitTimestamp != o.CommitTimestamp {
			t.Fatalf("kmsg value: %+v %v", kv, err)
		}
		if o.ExpireTimestamp >= 0 && (kv.Version != 1 || kv.ExpireTimestamp != o.ExpireTimestamp) {
			t.Fatalf("explicit expiry must be written as v1: %+v", kv)
		}
		if o.ExpireTimestamp < 0 && (kv.Version != 3 || kv.LeaderEpoch != o.LeaderEpoch) {
			t.Fatalf("commit without expiry must be written as v3: %+v", kv)
		}
	}
}

func TestGroupRecordRoundTripAndKafkaFormat(t *testing.T) {
	v := &groupValue{
		ProtocolType: "consumer", Generation: 5, Protocol: strp("range"), Leader: strp("m1"), CurrentStateTimestamp: 1700000000000,
		Members: []memberValue{
			{MemberID: "m1", InstanceID: strp("i1"), ClientID: "c1", ClientHost: "/10.0.0.1", RebalanceTimeoutMs: 60000, SessionTimeoutMs: 10000, Subscription: []byte{1, 2}, Assignment: []byte{3}},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/10.0.0.2", RebalanceTimeoutMs: 30000, SessionTimeoutMs: 6000, Subscription: []byte{}, Assignment: []byte{}},
		},
	}
	b := encodeGroupValue(v)
	got, err := decodeGroupValue(b)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip:\n got %+v %v\nwant %+v", got, err, v)
	}
	var kv kmsg.GroupMetadataValue
	if err := kv.ReadFrom(b); err != nil || kv.Version != 3 || kv.Generation != 5 || len(kv.Members) != 2 || *kv.Members[0].InstanceID != "i1" {
		t.Fatalf("kmsg value: %+v %v", kv, err)
	}
	var kk kmsg.GroupMetadataKey
	if err := kk.ReadFrom(groupKey("grp")); err != nil || kk.Version != 2 || kk.Group != "grp" {
		t.Fatalf("kmsg key: %+v %v", kk, err)
	}
	// Values written by newer Kafka (flexible v4) decode too.
	kv.Version = 4
	flex := kv.AppendTo(nil)
	got, err = decodeGroupValue(flex)
	if err != nil || got.Generation != 5 || len(got.Members) != 2 || got.Members[1].MemberID != "m2" {
		t.Fatalf("v4 value: %+v %v", got, err)
	}
}

func TestUndecodableRecordsAreErrorsNotPanics(t *testing.T) {
	b := encodeGroupValue(&groupValue{ProtocolType: "consumer", Members: []memberValue{{MemberID: "m"}}})
	for i := range len(b) {
		if _, err := decodeGroupValue(b[:i]); err == nil {
			t.Fatalf("truncated group value (%d of %d bytes) decoded without error", i, len(b))
		}
	}
	if _, _, err := decodeKey([]byte{0}); err == nil {
		t.Fatalf("one-byte key decoded without error")
	}
	if _, ok, err := decodeKey([]byte{0, 16, 1, 2}); ok || err != nil {
		t.Fatalf("newer key version: ok=%v err=%v, want skipped", ok, err)
	}
	if _, _, err := decodeKey([]byte{0, 5, 1, 2}); err == nil {
		t.Fatalf("truncated consumer group key decoded without error")
	}
}

func TestBuiltBatchIsValidAndParsesBack(t *testing.T) {
	recs := []record{
		{key: offsetKey("g", TopicPartition{Topic: "t", Partition: 0}), value: encodeOffsetValue(OffsetAndMetadata{Offset: 1, LeaderEpoch: -1, ExpireTimestamp: -1})},
		{key: groupKey("g")}, // tombstone
	}
	batch := buildBatch(recs, 1700000000000)
	hdrs, err := partition.ValidateBatches(batch, 1<<20)
	if err != nil || len(hdrs) != 1 || hdrs[0].NumRecords != 2 {
		t.Fatalf("ValidateBatches: %v %+v", err, hdrs)
	}
	var got []coordinator.LogRecord
	next, err := coordinator.ParseBatches(batch, 1<<20, func(r coordinator.LogRecord) error { got = append(got, r); return nil })
	if err != nil || next != 2 || len(got) != 2 {
		t.Fatalf("ParseBatches: next %d err %v records %d", next, err, len(got))
	}
	if !bytes.Equal(got[0].Key, recs[0].key) || !bytes.Equal(got[0].Value, recs[0].value) || got[1].Value != nil || got[1].Offset != 1 {
		t.Fatalf("records parsed back differ: %+v", got)
	}
}

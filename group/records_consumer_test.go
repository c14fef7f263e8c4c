package group

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/gokafka/gokafka/cluster"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The bytes below are written out by hand from Kafka 4's record schemas
// (ConsumerGroup*Key/Value.json): keys are the record type then
// non-flexible strings; values are version 0 then flexible fields (compact
// strings and arrays as length+1, uuids as 16 bytes, an empty tag buffer
// after every struct).
func TestConsumerGroupRecordsAreKafkasFormat(t *testing.T) {
	x := cluster.TopicID{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xbb}
	xs := "aa0102030405060708090a0b0c0d0ebb"
	rack := "r"
	m := &consumerMember{
		id: "m", rackID: &rack, clientID: "c", clientHost: "h", topics: []string{"t"}, rebalanceTimeoutMs: 1000, assignor: "uniform",
		epoch: 3, prevEpoch: 2, state: memberUnrevoked,
		assigned: partSet{{x, 1}: {}}, revoking: partSet{{x, 0}: {}},
	}
	cases := []struct {
		name      string
		got, want []byte
	}{
		{"ConsumerGroupMetadataKey", consumerGroupKey(recConsumerGroupMetadata, "g"), unhex(t, "0003 0001 67")},
		{"ConsumerGroupMetadataValue", appendEpochValue(5), unhex(t, "0000 00000005 00")},
		{"ConsumerGroupMemberMetadataKey", consumerMemberKey(recConsumerGroupMemberMetadata, "g", "m"), unhex(t, "0005 0001 67 0001 6d")},
		{"ConsumerGroupMemberMetadataValue", encodeMemberMetadataValue(m), unhex(t,
			"0000 00 0272 0263 0268 02 0274 00 000003e8 08"+hex.EncodeToString([]byte("uniform"))+" 00")},
		{"ConsumerGroupTargetAssignmentMetadataKey", consumerGroupKey(recConsumerGroupTargetMetadata, "g"), unhex(t, "0006 0001 67")},
		{"ConsumerGroupTargetAssignmentMemberKey", consumerMemberKey(recConsumerGroupTargetMember, "g", "m"), unhex(t, "0007 0001 67 0001 6d")},
		{"ConsumerGroupTargetAssignmentMemberValue", encodeTargetMemberValue(partSet{{x, 1}: {}, {x, 0}: {}}), unhex(t,
			"0000 02 "+xs+" 03 00000000 00000001 00 00")},
		{"ConsumerGroupCurrentMemberAssignmentKey", consumerMemberKey(recConsumerGroupCurrentAssignment, "g", "m"), unhex(t, "0008 0001 67 0001 6d")},
		{"ConsumerGroupCurrentMemberAssignmentValue", encodeCurrentAssignmentValue(m), unhex(t,
			"0000 00000003 00000002 01 02 "+xs+" 02 00000001 00 02 "+xs+" 02 00000000 00 00")},
	}
	for _, c := range cases {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s:\n got %x\nwant %x", c.name, c.got, c.want)
		}
	}
	// And they read back.
	var back consumerMember
	if err := decodeMemberMetadataValue(cases[3].want, &back); err != nil || back.clientID != "c" || *back.rackID != "r" || back.assignor != "uniform" || back.rebalanceTimeoutMs != 1000 || !reflect.DeepEqual(back.topics, []string{"t"}) {
		t.Fatalf("member metadata read back: %+v %v", back, err)
	}
	if err := decodeCurrentAssignmentValue(cases[8].want, &back); err != nil || back.epoch != 3 || back.prevEpoch != 2 || back.state != memberUnrevoked || !back.assigned.equal(m.assigned) || !back.revoking.equal(m.revoking) {
		t.Fatalf("current assignment read back: %+v %v", back, err)
	}
	if k, ok, err := decodeKey(cases[2].want); err != nil || !ok || !k.consumer || k.group != "g" {
		t.Fatalf("decodeKey of a member key: %+v %v %v", k, ok, err)
	}
}

// A consumer group rebuilt from its own records is the same group; a
// truncated record is an error, never a panic.
func TestConsumerGroupRoundTripsThroughItsRecords(t *testing.T) {
	view := NewTopicsView([]TopicMeta{{Name: "t", ID: cluster.TopicID{9}, Partitions: 3}, {Name: "u", ID: cluster.TopicID{8}, Partitions: 1}})
	deps := &consumerDeps{sessionTimeoutMs: 45000, heartbeatIntervalMs: 5000, maxSize: 10, newMemberID: func() string { return "x" }}
	g := newConsumerGroup("g", deps)
	inst, re := "i1", "u|t"
	g.heartbeat(0, view, &ConsumerHeartbeat{Version: 1, MemberID: "a", RebalanceTimeoutMs: 1000, TopicNames: []string{"t"}, Owned: map[cluster.TopicID][]int32{}, ClientID: "ca"})
	g.heartbeat(0, view, &ConsumerHeartbeat{Version: 1, MemberID: "b", InstanceID: &inst, RebalanceTimeoutMs: 2000, TopicRegex: &re, Owned: map[cluster.TopicID][]int32{}, ClientID: "cb"})
	recs := g.consumerRecords()
	got, ok, err := loadConsumerGroup("g", deps, recs, view, 100)
	if err != nil || !ok {
		t.Fatalf("load: %v %v", ok, err)
	}
	if !reflect.DeepEqual(got.describe(), g.describe()) || !reflect.DeepEqual(got.owners, g.owners) || !reflect.DeepEqual(got.static, g.static) {
		t.Fatalf("rebuilt group:\n%+v\nwant\n%+v", got.describe(), g.describe())
	}
	for id, m := range got.members {
		if m.sessionDeadline != 100+deps.sessionTimeoutMs {
			t.Fatalf("member %s session deadline %d after load, want it restarted at load time", id, m.sessionDeadline)
		}
	}
	if _, ok, _ := loadConsumerGroup("h", deps, recs, view, 0); ok {
		t.Fatalf("a group without its metadata record loaded")
	}
	for k, v := range recs {
		for i := range len(v) {
			trunc := map[string][]byte{}
			for k2, v2 := range recs {
				trunc[k2] = v2
			}
			trunc[k] = v[:i]
			if _, _, err := loadConsumerGroup("g", deps, trunc, view, 0); err == nil {
				t.Fatalf("record %x truncated to %d of %d bytes loaded without error", k, i, len(v))
			}
		}
	}
}

// Share groups' records, written out by hand from Kafka 4's
// ShareGroup*Key/Value.json, and read back.
func TestShareGroupRecordsAreKafkasFormat(t *testing.T) {
	x := cluster.TopicID{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xbb}
	xs := "aa0102030405060708090a0b0c0d0ebb"
	st := &ShareGroupState{Epoch: 7, Members: []ShareMemberState{{
		ID: "m", ClientID: "c", ClientHost: "h", Subscribed: []string{"t"}, Epoch: 7, PrevEpoch: 5,
		Assignment: map[cluster.TopicID][]int32{x: {0, 1}},
	}}}
	recs := shareRecords("g", st)
	want := map[string]string{
		"000b 0001 67":         "0000 00000007 00",
		"000c 0001 67":         "0000 00000007 00",
		"000a 0001 67 0001 6d": "0000 00 0263 0268 02 0274 00",
		"000d 0001 67 0001 6d": "0000 02 " + xs + " 03 00000000 00000001 00 00",
		"000e 0001 67 0001 6d": "0000 00000007 00000005 00 02 " + xs + " 03 00000000 00000001 00 00",
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for k, v := range want {
		if got, ok := recs[string(unhex(t, k))]; !ok || !bytes.Equal(got, unhex(t, v)) {
			t.Errorf("record %s = %x, want %s", k, got, v)
		}
	}
	back, err := loadShareGroup("g", recs)
	if err != nil || !reflect.DeepEqual(back, st) {
		t.Fatalf("read back %+v %v, want %+v", back, err, st)
	}
	if k, ok, err := decodeKey(unhex(t, "000a 0001 67 0001 6d")); err != nil || !ok || !k.share || k.group != "g" {
		t.Fatalf("decodeKey of a share member key: %+v %v %v", k, ok, err)
	}
}

package group

import (
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// offsetsBatchCases are representative __consumer_offsets batches: plain
// commits (v3 and, with an expire timestamp, v1 values), group metadata,
// tombstones, several records, empty values, and a transactional
// producer's commit.
func offsetsBatchCases() map[string]struct {
	recs  []record
	ts    int64
	pid   int64
	epoch int16
} {
	tp := TopicPartition{Topic: "orders", Partition: 7}
	inst := "instance-1"
	proto, leader := "range", "member-1"
	gv := &groupValue{ProtocolType: "consumer", Generation: 4, Protocol: &proto, Leader: &leader, CurrentStateTimestamp: 1700000000123,
		Members: []memberValue{{MemberID: "member-1", InstanceID: &inst, ClientID: "c", ClientHost: "/10.0.0.1", RebalanceTimeoutMs: 300000, SessionTimeoutMs: 45000, Subscription: []byte{0, 1, 2}, Assignment: []byte{}}}}
	commit := record{key: offsetKey("g", tp), value: encodeOffsetValue(OffsetAndMetadata{Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTimestamp: 1700000000000, ExpireTimestamp: -1})}
	expiring := record{key: offsetKey("g", tp), value: encodeOffsetValue(OffsetAndMetadata{Offset: 43, LeaderEpoch: -1, CommitTimestamp: 1700000000000, ExpireTimestamp: 1700000600000})}
	type c = struct {
		recs  []record
		ts    int64
		pid   int64
		epoch int16
	}
	return map[string]c{
		"commit":           {[]record{commit}, 1700000000000, -1, -1},
		"commit_expiring":  {[]record{expiring}, 1700000000001, -1, -1},
		"group_metadata":   {[]record{{key: groupKey("g"), value: encodeGroupValue(gv)}}, 1700000000002, -1, -1},
		"tombstones":       {[]record{{key: offsetKey("g", tp)}, {key: groupKey("g")}}, 1700000000003, -1, -1},
		"many":             {[]record{commit, expiring, {key: groupKey("g"), value: encodeGroupValue(gv)}, {key: groupKey("h")}}, 0, -1, -1},
		"empty_value":      {[]record{{key: groupKey("g"), value: []byte{}}}, -1, -1, -1},
		"txn_commit":       {[]record{commit, expiring}, 1700000000004, 1234, 5},
		"txn_commit_epoch": {[]record{commit}, 1700000000005, 1<<40 + 3, 32767},
	}
}

func TestOffsetsBatchesAreByteForByteGolden(t *testing.T) {
	got := map[string][]byte{}
	for name, c := range offsetsBatchCases() {
		b := buildProducerBatch(c.recs, c.ts, c.pid, c.epoch)
		if c.pid < 0 {
			b = buildBatch(c.recs, c.ts)
		}
		got[name] = b
	}
	testkit.GoldenHex(t, "testdata/batches.golden", got)
}

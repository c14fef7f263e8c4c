package txn

import (
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

func TestStateBatchesAreByteForByteGolden(t *testing.T) {
	m := meta{id: "txn-1", producerID: 77, lastProducerID: -1, epoch: 2, lastEpoch: -1, timeoutMs: 60000, state: StateOngoing,
		partitions: map[TopicPartition]bool{{Topic: "a", Partition: 0}: true, {Topic: "a", Partition: 3}: true, {Topic: "b", Partition: 1}: true},
		startMs:    1700000000000, updateMs: 1700000000100}
	empty := meta{id: "txn-2", producerID: 78, lastProducerID: -1, epoch: 0, lastEpoch: -1, timeoutMs: 1000, state: StateEmpty,
		partitions: map[TopicPartition]bool{}, startMs: -1, updateMs: 1700000000200}
	cases := map[string]struct {
		key, value []byte
		ts         int64
	}{
		"ongoing":   {encodeKey(m.id), encodeValue(m), 1700000000100},
		"empty":     {encodeKey(empty.id), encodeValue(empty), 1700000000200},
		"tombstone": {encodeKey(m.id), nil, 0},
	}
	got := map[string][]byte{}
	for name, c := range cases {
		got[name] = buildBatch(c.key, c.value, c.ts)
	}
	testkit.GoldenHex(t, "testdata/batches.golden", got)
}

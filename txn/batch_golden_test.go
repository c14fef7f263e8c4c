package txn

import (
	"bytes"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
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
		b := buildBatch(c.key, c.value, c.ts)
		nb := partition.NewBatchBuilder(c.ts).Add(partition.Record{Key: c.key, Value: c.value}).Build()
		if !bytes.Equal(b, nb) {
			t.Errorf("case %s: partition.BatchBuilder differs\n got %x\nwant %x", name, nb, b)
		}
		got[name] = b
	}
	testkit.GoldenHex(t, "testdata/batches.golden", got)
}

package txn

import (
	"encoding/binary"
	"testing"
)

func TestParseBatchesSkipsAMalformedBatchAndReadsTheRest(t *testing.T) {
	good := func(id string, pid int64) []byte {
		return buildBatch(encodeKey(id), encodeValue(meta{id: id, producerID: pid, lastProducerID: -1, lastEpoch: -1, timeoutMs: 60000, state: StateEmpty}), 1)
	}
	at := func(b []byte, base int64) []byte {
		binary.BigEndian.PutUint64(b, uint64(base))
		return b
	}
	bad := good("bad", 2)
	// Claims two records, holds one.
	binary.BigEndian.PutUint32(bad[57:], 2)
	var log []byte
	log = append(log, at(good("a", 1), 0)...)
	log = append(log, at(bad, 1)...)
	log = append(log, at(good("b", 3), 3)...)

	var ids []string
	var badAt []int64
	next, _, err := parseBatches(log, func(_ int64, key, _ []byte) {
		id, _, err := decodeKey(key)
		if err != nil {
			t.Fatalf("decodeKey: %v", err)
		}
		ids = append(ids, id)
	}, func(offset int64, _ error) { badAt = append(badAt, offset) })
	if err != nil {
		t.Fatalf("parseBatches: %v", err)
	}
	if next != 4 {
		t.Fatalf("next %d, want 4 (after the last batch)", next)
	}
	if len(badAt) != 1 || badAt[0] != 1 {
		t.Fatalf("malformed batches reported at %v, want [1]", badAt)
	}
	// The malformed batch's readable first record is kept; what matters
	// is that "b", after it, is read.
	if len(ids) < 2 || ids[0] != "a" || ids[len(ids)-1] != "b" {
		t.Fatalf("records read: %v, want a ... b", ids)
	}
}

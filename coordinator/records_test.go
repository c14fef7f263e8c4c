package coordinator

import (
	"encoding/binary"
	"testing"

	"github.com/gokafka/gokafka/partition"
)

func TestParseBatchesSkipsAMalformedBatchAndReadsTheRest(t *testing.T) {
	good := func(key string, base int64) []byte {
		b := partition.NewBatchBuilder(1).Add(partition.Record{Key: []byte(key), Value: []byte("v")}).Build()
		binary.BigEndian.PutUint64(b, uint64(base))
		return b
	}
	bad := good("bad", 1)
	// Claims two records, holds one.
	binary.BigEndian.PutUint32(bad[57:], 2)
	var log []byte
	log = append(log, good("a", 0)...)
	log = append(log, bad...)
	log = append(log, good("b", 3)...)

	var keys []string
	var badAt []int64
	next, err := ParseBatches(log, 1<<20, func(r LogRecord) error {
		if r.Bad != nil {
			badAt = append(badAt, r.Offset)
		} else {
			keys = append(keys, string(r.Key))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ParseBatches: %v", err)
	}
	if next != 4 {
		t.Fatalf("next %d, want 4 (after the last batch)", next)
	}
	if len(badAt) != 1 || badAt[0] != 1 {
		t.Fatalf("malformed batches reported at %v, want [1]", badAt)
	}
	// The malformed batch's readable first record is kept; what matters
	// is that "b", after it, is read.
	if len(keys) < 2 || keys[0] != "a" || keys[len(keys)-1] != "b" {
		t.Fatalf("records read: %v, want a ... b", keys)
	}
}

func TestParseBatchesReportsMarkersAndTransactionalRecords(t *testing.T) {
	tb := partition.NewBatchBuilder(1)
	tb.ProducerID, tb.ProducerEpoch, tb.Transactional = 9, 0, true
	log := tb.Add(partition.Record{Key: []byte("k")}).Build()
	marker := partition.ControlBatch(9, 0, 3, true, 1)
	binary.BigEndian.PutUint64(marker, 1)
	log = append(log, marker...)
	var got []LogRecord
	if _, err := ParseBatches(log, 1<<20, func(r LogRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ProducerID != 9 || got[0].Value != nil || got[0].Control ||
		!got[1].Control || !got[1].Commit || got[1].ProducerID != 9 || got[1].Offset != 1 {
		t.Fatalf("read %+v", got)
	}
}

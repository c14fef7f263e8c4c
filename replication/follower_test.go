package replication

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/partition"
)

// oneRecordBatch is a minimal valid v2 batch of one record, as a producer
// sends it.
func oneRecordBatch() []byte {
	rec := []byte{0, 0, 0, 1, 0, 0} // attributes, ts delta, offset delta, null key, empty value, no headers
	b := make([]byte, partition.BatchHeaderSize, partition.BatchHeaderSize+1+len(rec))
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], 1)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// epochLog returns a log holding one single-record batch per entry of
// epochs, each written under that leader epoch.
func epochLog(t *testing.T, epochs ...int32) *partition.Log {
	t.Helper()
	lg, err := partition.Open(partition.NewMemFS(), "/logs", partition.TopicPartition{Topic: "t"}, partition.DefaultConfig(), zerolog.Nop(), partition.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	for _, e := range epochs {
		if _, err := lg.Append(oneRecordBatch(), e); err != nil {
			t.Fatal(err)
		}
	}
	return lg
}

// Rule 7 (KIP-101/279, Kafka's AbstractFetcherThread.getOffsetTruncationState):
// where a follower truncates given the leader's answer for its latest epoch.
func TestRule7_TruncationOffsetFromLeaderEpochAnswer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		follower    []int32 // epoch of each record
		hw          int64
		leaderEpoch int32
		leaderEnd   int64
		wantOffset  int64
		wantDone    bool
	}{
		{"leader's epoch ends before ours: cut there", []int32{0, 0, 0, 2, 2, 2}, 0, 2, 4, 4, true},
		{"leader's epoch ends after ours: keep ours", []int32{0, 0, 2}, 0, 2, 10, 3, true},
		{"leader's epoch ends where our next one starts", []int32{0, 0, 0, 2, 2, 2}, 0, 0, 3, 3, true},
		{"leader's epoch ends earlier than ours", []int32{0, 0, 0, 2, 2, 2}, 0, 0, 2, 2, true},
		// KIP-279: the leader answers an epoch we never had; we cut at the
		// end of our largest epoch below it and must ask again.
		{"unknown epoch in the answer: cut and ask again", []int32{0, 0, 0, 2, 2, 2}, 0, 1, 4, 3, false},
		{"leader knows no epoch at or below ours: keep what is committed", []int32{0, 0, 2}, 1, -1, -1, 1, true},
		{"no epoch in the answer (old leader): its end offset", []int32{0, 0, 0}, 0, -1, 2, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := epochLog(t, tc.follower...)
			lg.SetHighWatermark(tc.hw)
			off, done := truncationOffset(lg, tc.leaderEpoch, tc.leaderEnd)
			if off != tc.wantOffset || done != tc.wantDone {
				t.Fatalf("truncate to %d (done %v), want %d (done %v)", off, done, tc.wantOffset, tc.wantDone)
			}
		})
	}
}

package partition

import (
	"bytes"
	"testing"
)

func TestBatchBuilderWritesAValidBatchWithHeadersAndTimestamps(t *testing.T) {
	b := NewBatchBuilder(1000)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 9, 2, 40
	b.Add(Record{Key: []byte("k"), Value: []byte("v"), TimestampDelta: 5, Headers: []RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n"}}})
	b.Add(Record{Value: nil, TimestampDelta: 2})
	batch := b.Build()
	hdrs, err := ValidateBatches(batch, 1<<20)
	if err != nil || len(hdrs) != 1 {
		t.Fatalf("ValidateBatches: %v", err)
	}
	h := hdrs[0]
	if h.NumRecords != 2 || h.LastOffsetDelta != 1 || h.FirstTimestamp != 1000 || h.MaxTimestamp != 1005 ||
		h.ProducerID != 9 || h.ProducerEpoch != 2 || h.BaseSequence != 40 || h.IsTransactional() || h.IsControl() {
		t.Fatalf("header %+v", h)
	}
	it, err := NewRecordIter(h, bytes.NewReader(batch[BatchHeaderSize:]), 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []Record
	for it.Next() {
		r, err := it.Record()
		if err != nil {
			t.Fatal(err)
		}
		r.TimestampDelta = it.Timestamp - h.FirstTimestamp
		got = append(got, r)
	}
	if it.Err() != nil || len(got) != 2 {
		t.Fatalf("read %d records: %v", len(got), it.Err())
	}
	r := got[0]
	if string(r.Key) != "k" || string(r.Value) != "v" || r.TimestampDelta != 5 || len(r.Headers) != 2 ||
		r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "x" || r.Headers[1].Key != "n" || r.Headers[1].Value != nil {
		t.Fatalf("first record read back as %+v", r)
	}
	if got[1].Key != nil || got[1].Value != nil || got[1].TimestampDelta != 2 {
		t.Fatalf("second record read back as %+v", got[1])
	}
}

func TestControlBatchReadsBackAsItsMarker(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := ControlBatch(7, 3, 11, commit, 0)
		h, err := ParseBatchHeader(b)
		if err != nil || !h.IsControl() || !h.IsTransactional() || h.ProducerID != 7 || h.ProducerEpoch != 3 {
			t.Fatalf("header %+v %v", h, err)
		}
		m, ok := ReadControlMarker(b)
		if !ok || m.Commit != commit || m.CoordinatorEpoch != 11 {
			t.Fatalf("marker %+v %v, want commit=%v epoch 11", m, ok, commit)
		}
	}
	if m, ok := ReadControlMarker(make([]byte, BatchHeaderSize)); ok || m.Commit {
		t.Fatal("an empty control batch reads as a marker")
	}
}

package share

import (
	"errors"
	"slices"
	"testing"
)

// The share-partition transitions of KIP-932 ("In-flight records"),
// driven with explicit times: no clock, no goroutines.

var lim = Limits{LockMs: 1000, DeliveryLimit: 3, MaxInFlight: 100}

func recs(first, last int64) []Span { return []Span{{First: first, Last: last}} }

func accept(first, last int64) []AckBatch {
	return []AckBatch{{First: first, Last: last, Types: []int8{int8(AckAccept)}}}
}

func ack(first, last int64, t AckType) []AckBatch {
	return []AckBatch{{First: first, Last: last, Types: []int8{int8(t)}}}
}

func wantStates(t *testing.T, p *Partition, from int64, want ...RecordState) {
	t.Helper()
	for i, w := range want {
		if got := p.State(from + int64(i)); got != w {
			t.Errorf("offset %d: state %v, want %v", from+int64(i), got, w)
		}
	}
}

func TestAcquireHandsOutEachRecordOnce(t *testing.T) {
	p := NewPartition(0)
	got := p.Acquire("a", 0, recs(0, 9), 10, 4, lim)
	if want := []AcquiredRange{{0, 3, 1}}; !slices.Equal(got, want) {
		t.Fatalf("first acquire: %v, want %v (MaxRecords bounds it)", got, want)
	}
	got = p.Acquire("b", 0, recs(0, 9), 10, 100, lim)
	if want := []AcquiredRange{{4, 9, 1}}; !slices.Equal(got, want) {
		t.Fatalf("second member: %v, want %v (acquired records are not shared)", got, want)
	}
	if got := p.Acquire("c", 0, recs(0, 9), 10, 100, lim); len(got) != 0 {
		t.Fatalf("third member got %v; everything is acquired", got)
	}
	if p.StartOffset() != 0 || p.EndOffset() != 10 {
		t.Fatalf("start/end %d/%d, want 0/10", p.StartOffset(), p.EndOffset())
	}
}

func TestAcquireStopsAtTheLimitOffset(t *testing.T) {
	p := NewPartition(0)
	// The reader returned a batch 0-9 but only 0-4 are below the high
	// watermark (or the last stable offset).
	got := p.Acquire("a", 0, recs(0, 9), 5, 100, lim)
	if want := []AcquiredRange{{0, 4, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p.EndOffset() != 5 {
		t.Fatalf("end %d, want 5", p.EndOffset())
	}
}

func TestAcceptAdvancesTheStartOffset(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 4), 5, 100, lim)
	// Accepting 2-4 first leaves the start at 0: 0-1 are still acquired.
	if _, err := p.Acknowledge("a", 1, accept(2, 4), false, lim); err != nil {
		t.Fatal(err)
	}
	wantStates(t, p, 0, Acquired, Acquired, Acknowledged, Acknowledged, Acknowledged)
	if p.StartOffset() != 0 {
		t.Fatalf("start %d, want 0", p.StartOffset())
	}
	if _, err := p.Acknowledge("a", 1, accept(0, 1), false, lim); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 5 {
		t.Fatalf("start %d after accepting everything, want 5", p.StartOffset())
	}
	if av, acq := p.InFlight(); av+acq != 0 {
		t.Fatalf("%d available, %d acquired left", av, acq)
	}
}

func TestLockExpiryMakesRecordsAvailableAgain(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 2), 3, 100, lim)
	if p.Expire(999, lim) {
		t.Fatal("released before the lock ended")
	}
	if !p.Expire(1000, lim) {
		t.Fatal("not released when the lock ended")
	}
	wantStates(t, p, 0, Available, Available, Available)
	got := p.Acquire("b", 1000, recs(0, 2), 3, 100, lim)
	if want := []AcquiredRange{{0, 2, 2}}; !slices.Equal(got, want) {
		t.Fatalf("redelivery: %v, want %v (delivery count 2)", got, want)
	}
	// The first member's late acknowledgement is refused: it no longer
	// holds the records.
	if _, err := p.Acknowledge("a", 1001, accept(0, 2), false, lim); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("late ack: %v, want ErrInvalidRecordState", err)
	}
}

func TestRenewExtendsTheLock(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 0), 1, 100, lim)
	if _, err := p.Acknowledge("a", 900, ack(0, 0, AckRenew), false, lim); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("renew without IsRenewAck: %v, want ErrInvalidRequest", err)
	}
	if _, err := p.Acknowledge("a", 900, ack(0, 0, AckRenew), true, lim); err != nil {
		t.Fatal(err)
	}
	if p.Expire(1500, lim) {
		t.Fatal("released before the renewed lock ended")
	}
	if !p.Expire(1900, lim) {
		t.Fatal("not released when the renewed lock ended")
	}
}

func TestReleaseAndReject(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 2), 3, 100, lim)
	batches := []AckBatch{{First: 0, Last: 2, Types: []int8{int8(AckRelease), int8(AckReject), int8(AckAccept)}}}
	released, err := p.Acknowledge("a", 1, batches, false, lim)
	if err != nil || !released {
		t.Fatalf("released %v, err %v", released, err)
	}
	wantStates(t, p, 0, Available, Archived, Acknowledged)
	got := p.Acquire("b", 2, recs(0, 2), 3, 100, lim)
	if want := []AcquiredRange{{0, 0, 2}}; !slices.Equal(got, want) {
		t.Fatalf("after release: %v, want %v (the rejected record is never redelivered)", got, want)
	}
	if _, err := p.Acknowledge("b", 3, accept(0, 0), false, lim); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 3 {
		t.Fatalf("start %d, want 3", p.StartOffset())
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	p := NewPartition(0)
	for i := int16(1); i <= lim.DeliveryLimit; i++ {
		got := p.Acquire("a", 0, recs(0, 0), 1, 100, lim)
		if want := []AcquiredRange{{0, 0, i}}; !slices.Equal(got, want) {
			t.Fatalf("delivery %d: %v, want %v", i, got, want)
		}
		released, err := p.Acknowledge("a", 0, ack(0, 0, AckRelease), false, lim)
		if err != nil {
			t.Fatal(err)
		}
		if last := i == lim.DeliveryLimit; released == last {
			t.Fatalf("delivery %d: released %v", i, released)
		}
	}
	// The release after the last delivery archived the record and the
	// start offset moved past it.
	if p.StartOffset() != 1 {
		t.Fatalf("start %d, want 1", p.StartOffset())
	}
	if got := p.Acquire("a", 0, recs(0, 0), 1, 100, lim); len(got) != 0 {
		t.Fatalf("archived record delivered again: %v", got)
	}
}

func TestLockExpiryAtTheDeliveryLimitArchives(t *testing.T) {
	p := NewPartition(0)
	now := int64(0)
	for i := int16(0); i < lim.DeliveryLimit; i++ {
		if got := p.Acquire("a", now, recs(0, 0), 1, 100, lim); len(got) != 1 {
			t.Fatalf("delivery %d: %v", i+1, got)
		}
		now += lim.LockMs
		p.Expire(now, lim)
	}
	if p.StartOffset() != 1 || p.State(0) != Finished {
		t.Fatalf("start %d, state %v: want the record archived and passed", p.StartOffset(), p.State(0))
	}
}

func TestSkippedBatchesAndGaps(t *testing.T) {
	p := NewPartition(0)
	// 0-1 records, 2 a transaction marker, 3-4 compacted away, 5-6 records.
	spans := []Span{{First: 0, Last: 1}, {First: 2, Last: 2, Skip: true}, {First: 5, Last: 6}}
	got := p.Acquire("a", 0, spans, 7, 100, lim)
	if want := []AcquiredRange{{0, 1, 1}, {5, 6, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The client acknowledges the offsets it saw no record for as gaps.
	batches := []AckBatch{
		{First: 0, Last: 1, Types: []int8{int8(AckAccept)}},
		{First: 2, Last: 4, Types: []int8{int8(AckGap)}},
		{First: 5, Last: 6, Types: []int8{int8(AckAccept)}},
	}
	if _, err := p.Acknowledge("a", 1, batches, false, lim); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 7 {
		t.Fatalf("start %d, want 7", p.StartOffset())
	}
}

func TestAcknowledgementValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches []AckBatch
		want    error
	}{
		{"other member's records", accept(0, 1), ErrInvalidRecordState},
		{"past the end offset", accept(8, 12), ErrInvalidRecordState},
		{"first after last", []AckBatch{{First: 3, Last: 2, Types: []int8{1}}}, ErrInvalidRequest},
		{"overlapping batches", append(accept(2, 3), accept(3, 4)...), ErrInvalidRequest},
		{"wrong type count", []AckBatch{{First: 2, Last: 4, Types: []int8{1, 1}}}, ErrInvalidRequest},
		{"unknown type", ack(2, 2, AckType(9)), ErrInvalidRequest},
		{"no types", []AckBatch{{First: 2, Last: 2}}, ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(0)
			p.Acquire("other", 0, recs(0, 1), 10, 100, lim)
			p.Acquire("a", 0, recs(2, 9), 10, 100, lim)
			if _, err := p.Acknowledge("a", 0, tc.batches, false, lim); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			// All or nothing: a refused request changes nothing.
			wantStates(t, p, 2, Acquired, Acquired, Acquired)
		})
	}
}

func TestReleaseMemberOnSessionClose(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 1), 4, 100, lim)
	p.Acquire("b", 0, recs(2, 3), 4, 100, lim)
	if !p.ReleaseMember("a", lim) {
		t.Fatal("nothing released")
	}
	wantStates(t, p, 0, Available, Available, Acquired, Acquired)
}

func TestMaxInFlightBoundsNewAcquisitions(t *testing.T) {
	small := lim
	small.MaxInFlight = 3
	p := NewPartition(0)
	got := p.Acquire("a", 0, recs(0, 9), 10, 100, small)
	if want := []AcquiredRange{{0, 2, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Released records inside the window can still be taken.
	p.Acknowledge("a", 0, ack(1, 1, AckRelease), false, small)
	got = p.Acquire("b", 0, recs(0, 9), 10, 100, small)
	if want := []AcquiredRange{{1, 1, 2}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Once the start moves the window slides.
	p.Acknowledge("a", 0, accept(0, 0), false, small)
	got = p.Acquire("b", 0, recs(0, 9), 10, 100, small)
	if want := []AcquiredRange{{3, 3, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestFetchOffsetAndSkipTo(t *testing.T) {
	p := NewPartition(5)
	if p.FetchOffset() != 5 {
		t.Fatalf("fetch offset %d, want 5", p.FetchOffset())
	}
	p.Acquire("a", 0, recs(5, 9), 10, 100, lim)
	p.Acknowledge("a", 0, ack(7, 7, AckRelease), false, lim)
	if p.FetchOffset() != 7 {
		t.Fatalf("fetch offset %d, want the released 7", p.FetchOffset())
	}
	// Retention removed everything below 8.
	p.SkipTo(8)
	if p.StartOffset() != 8 || p.State(7) != Finished || p.State(8) != Acquired {
		t.Fatalf("after SkipTo: start %d, 7 %v, 8 %v", p.StartOffset(), p.State(7), p.State(8))
	}
}

func TestReset(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 9), 10, 100, lim)
	p.Reset(4)
	if p.StartOffset() != 4 || p.EndOffset() != 4 {
		t.Fatalf("start/end %d/%d, want 4/4", p.StartOffset(), p.EndOffset())
	}
	if got := p.Acquire("b", 0, recs(0, 9), 10, 100, lim); !slices.Equal(got, []AcquiredRange{{4, 9, 1}}) {
		t.Fatalf("got %v", got)
	}
}

func TestLag(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 0, recs(0, 4), 5, 100, lim)
	p.Acknowledge("a", 0, accept(1, 2), false, lim)
	// 0, 3, 4 in flight and 5-9 not read yet.
	if got := p.Lag(10); got != 8 {
		t.Fatalf("lag %d, want 8", got)
	}
}

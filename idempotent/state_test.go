package idempotent

import (
	"context"
	"errors"
	"math"
	"testing"
)

func batch(pid int64, epoch int16, first, last int32) Batch {
	return Batch{ProducerID: pid, Epoch: epoch, FirstSeq: first, LastSeq: last, MaxTimestamp: 1000}
}

// appendBatch runs Check then Update as the leader does, at offset off.
func appendBatch(t *testing.T, s *State, b Batch, off int64) (*BatchMeta, error) {
	t.Helper()
	dup, err := s.Check(b)
	if err != nil || dup != nil {
		return dup, err
	}
	s.Update(b, off, off+int64(b.LastSeq-b.FirstSeq))
	return nil, nil
}

func TestRule9_RetriedBatchAnsweredWithOriginalOffsets(t *testing.T) {
	s := NewState()
	for i, seq := range []int32{0, 5, 10} {
		if _, err := appendBatch(t, s, batch(7, 0, seq, seq+4), int64(100+i*5)); err != nil {
			t.Fatal(err)
		}
	}
	dup, err := s.Check(batch(7, 0, 5, 9))
	if err != nil || dup == nil {
		t.Fatalf("retry not recognised: dup=%v err=%v", dup, err)
	}
	if dup.FirstOffset != 105 || dup.LastOffset != 109 {
		t.Fatalf("retry answered with offsets %d-%d, want 105-109", dup.FirstOffset, dup.LastOffset)
	}
}

func TestRule9_OnlyLastFiveBatchesAreRemembered(t *testing.T) {
	s := NewState()
	for i := int32(0); i < 6; i++ {
		if _, err := appendBatch(t, s, batch(1, 0, i, i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if e := s.Entry(1); len(e.Batches) != 5 || e.Batches[0].FirstSeq != 1 {
		t.Fatalf("cached batches %+v", e.Batches)
	}
	// The oldest batch fell out: its retry is out of order, not a duplicate.
	if _, err := s.Check(batch(1, 0, 0, 0)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of a forgotten batch: %v", err)
	}
}

func TestRule9_GapIsOutOfOrderSequence(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 0, 0, 4), 0)
	if _, err := s.Check(batch(1, 0, 6, 8)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap accepted: %v", err)
	}
	if dup, err := s.Check(batch(1, 0, 5, 8)); err != nil || dup != nil {
		t.Fatalf("next batch refused: %v", err)
	}
}

func TestRule9_OldEpochIsInvalidProducerEpoch(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 3, 0, 0), 0)
	if _, err := s.Check(batch(1, 2, 1, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
}

func TestRule9_NewEpochMustStartAtSequenceZero(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 0, 0, 9), 0)
	if _, err := s.Check(batch(1, 1, 10, 12)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at sequence 10: %v", err)
	}
	if _, err := appendBatch(t, s, batch(1, 1, 0, 2), 10); err != nil {
		t.Fatal(err)
	}
	if e := s.Entry(1); e.Epoch != 1 || len(e.Batches) != 1 {
		t.Fatalf("entry after epoch bump %+v", e)
	}
}

func TestRule9_UnknownProducerMayStartAnywhere(t *testing.T) {
	s := NewState()
	if dup, err := s.Check(batch(42, 0, 1234, 1240)); err != nil || dup != nil {
		t.Fatalf("unknown producer refused: %v", err)
	}
}

func TestRule9_SequenceWrapsAtMaxInt32(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 0, math.MaxInt32-1, math.MaxInt32), 0)
	if _, err := s.Check(batch(1, 0, 0, 3)); err != nil {
		t.Fatalf("wrap refused: %v", err)
	}
	if _, err := s.Check(batch(1, 0, 1, 3)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("wrap to 1 accepted: %v", err)
	}
}

func TestRule9_NonIdempotentBatchesAreNotChecked(t *testing.T) {
	s := NewState()
	b := batch(NoProducerID, -1, -1, -1)
	if dup, err := s.Check(b); err != nil || dup != nil {
		t.Fatalf("plain batch: %v %v", dup, err)
	}
	s.Update(b, 0, 9)
	if s.Len() != 0 || s.End() != 10 {
		t.Fatalf("len %d end %d", s.Len(), s.End())
	}
}

func TestExpiryForgetsIdleProducersButNotOpenTransactions(t *testing.T) {
	s := NewState()
	appendBatch(t, s, Batch{ProducerID: 1, FirstSeq: 0, LastSeq: 0, MaxTimestamp: 100}, 0)
	appendBatch(t, s, Batch{ProducerID: 2, FirstSeq: 0, LastSeq: 0, MaxTimestamp: 100, Transactional: true}, 1)
	appendBatch(t, s, Batch{ProducerID: 3, FirstSeq: 0, LastSeq: 0, MaxTimestamp: 900}, 2)
	if n := s.Expire(1000, 500); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if s.Entry(1) != nil || s.Entry(2) == nil || s.Entry(3) == nil {
		t.Fatal("wrong producers expired")
	}
}

func TestTransactionMarkerEndsTransaction(t *testing.T) {
	s := NewState()
	appendBatch(t, s, Batch{ProducerID: 1, FirstSeq: 0, LastSeq: 1, Transactional: true}, 10)
	if e := s.Entry(1); e.CurrentTxnFirstOffset != 10 {
		t.Fatalf("txn first offset %d", e.CurrentTxnFirstOffset)
	}
	if _, err := s.Check(Batch{ProducerID: 1, FirstSeq: 2, LastSeq: 2}); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional write inside a transaction: %v", err)
	}
	s.Update(Batch{ProducerID: 1, Control: true}, 12, 12)
	if e := s.Entry(1); e.CurrentTxnFirstOffset != -1 {
		t.Fatalf("marker did not end the transaction: %+v", e)
	}
}

func TestTruncateDropsBatchesPastOffset(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 0, 0, 4), 0)
	appendBatch(t, s, batch(1, 0, 5, 9), 5)
	appendBatch(t, s, batch(2, 0, 0, 0), 10)
	s.TruncateTo(5)
	if e := s.Entry(1); e == nil || len(e.Batches) != 1 || e.Batches[0].LastOffset != 4 {
		t.Fatalf("producer 1 after truncation: %+v", e)
	}
	if s.Entry(2) != nil || s.End() != 5 {
		t.Fatalf("producer 2 should be gone and end 5, end=%d", s.End())
	}
	// The batch past the truncation point may now be written again.
	if dup, err := s.Check(batch(1, 0, 5, 9)); err != nil || dup != nil {
		t.Fatalf("rewrite after truncation: %v %v", dup, err)
	}
}

func TestSnapshotRoundTripAndCorruption(t *testing.T) {
	s := NewState()
	appendBatch(t, s, batch(1, 2, 0, 4), 0)
	appendBatch(t, s, Batch{ProducerID: 9, Epoch: 1, FirstSeq: 0, LastSeq: 0, Transactional: true, MaxTimestamp: 77}, 5)
	b := s.MarshalSnapshot()
	got, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.End() != 6 || got.Entry(1).Epoch != 2 || got.Entry(9).CurrentTxnFirstOffset != 5 || got.Entry(1).Batches[0].LastOffset != 4 {
		t.Fatalf("round trip lost state: %+v %+v", got.Entry(1), got.Entry(9))
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x40
		if _, err := UnmarshalSnapshot(bad); err == nil {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
	if _, err := UnmarshalSnapshot(b[:len(b)-1]); err == nil {
		t.Fatal("truncated snapshot accepted")
	}
}

func TestAllocatorNeverRepeatsAndFetchesBlocks(t *testing.T) {
	next := int64(0)
	calls := 0
	a := NewAllocator(func(context.Context) (int64, int32, error) {
		calls++
		start := next
		next += 3
		return start, 3, nil
	})
	seen := map[int64]bool{}
	for i := 0; i < 10; i++ {
		id, err := a.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	if calls != 4 {
		t.Fatalf("%d block fetches for 10 ids of blocks of 3", calls)
	}
}

func TestMarkerFromOlderCoordinatorEpochIsFenced(t *testing.T) {
	s := NewState()
	appendBatch(t, s, Batch{ProducerID: 1, FirstSeq: 0, LastSeq: 0, Transactional: true}, 0)
	if _, err := appendBatch(t, s, Batch{ProducerID: 1, Control: true, FirstSeq: -1, LastSeq: -1, CoordinatorEpoch: 5}, 1); err != nil {
		t.Fatalf("marker from coordinator epoch 5: %v", err)
	}
	appendBatch(t, s, Batch{ProducerID: 1, FirstSeq: 1, LastSeq: 1, Transactional: true}, 2)
	if _, err := s.Check(Batch{ProducerID: 1, Control: true, FirstSeq: -1, LastSeq: -1, CoordinatorEpoch: 4}); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("marker from older coordinator epoch 4: %v", err)
	}
	if _, err := s.Check(Batch{ProducerID: 1, Control: true, FirstSeq: -1, LastSeq: -1, CoordinatorEpoch: 5}); err != nil {
		t.Fatalf("marker from the same coordinator epoch: %v", err)
	}
}

// Issue 11 item 8: a transaction marker written at a bumped epoch (an
// abort the coordinator started, KIP-890 markers) forgets the producer's
// batches of the old epoch; its next batch, at the new epoch, must start
// at sequence 0 as Kafka's checkSequence requires (NO_SEQUENCE + 1).
func TestMarkerBumpingEpochMakesNextSequenceZero(t *testing.T) {
	s := NewState()
	if _, err := appendBatch(t, s, Batch{ProducerID: 1, Epoch: 3, FirstSeq: 0, LastSeq: 4, Transactional: true}, 10); err != nil {
		t.Fatal(err)
	}
	s.Update(Batch{ProducerID: 1, Epoch: 4, Control: true, Abort: true}, 15, 15)
	if _, err := s.Check(Batch{ProducerID: 1, Epoch: 4, FirstSeq: 5, LastSeq: 5, Transactional: true}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 5 right after a marker bumped the epoch: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := s.Check(Batch{ProducerID: 1, Epoch: 3, FirstSeq: 5, LastSeq: 5, Transactional: true}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch after the bump: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := appendBatch(t, s, Batch{ProducerID: 1, Epoch: 4, FirstSeq: 0, LastSeq: 2, Transactional: true}, 16); err != nil {
		t.Fatalf("sequence 0 at the bumped epoch: %v", err)
	}
	if _, err := s.Check(Batch{ProducerID: 1, Epoch: 4, FirstSeq: 3, LastSeq: 3, Transactional: true}); err != nil {
		t.Fatalf("next in sequence: %v", err)
	}
}

// A broker holds a producer state for every partition it hosts, and most
// partitions never see an idempotent producer: empty state is one small
// allocation, its map made with the first producer.
func TestNewState_MakesNoMapUntilTheFirstProducer(t *testing.T) {
	var sink *State
	if n := testing.AllocsPerRun(100, func() { sink = NewState() }); n > 1 {
		t.Fatalf("NewState allocates %v times, want 1", n)
	}
	s := sink
	s.Update(batch(7, 0, 0, 0), 0, 0)
	if s.Len() != 1 || s.Entry(7) == nil {
		t.Fatalf("first producer not tracked: %d entries", s.Len())
	}
}

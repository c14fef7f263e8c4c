package txn

import (
	"errors"
	"math"
	"testing"
)

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

func fresh() meta {
	return meta{id: "t", producerID: 7, lastProducerID: -1, epoch: noEpoch, lastEpoch: noEpoch, timeoutMs: 1000,
		state: StateEmpty, partitions: map[TopicPartition]bool{}, startMs: -1}
}

func noPID() (int64, error) { return 0, errors.New("no new producer id expected") }

// initialized runs InitProducerId on a fresh id and applies it.
func initialized(t *testing.T) meta {
	t.Helper()
	next, out, err := fresh().prepareInit(0, 1000, -1, -1, noPID)
	if err != nil || out != initWrite {
		t.Fatalf("init: %v %v", out, err)
	}
	return next
}

func ongoing(t *testing.T, tps ...TopicPartition) meta {
	t.Helper()
	m := initialized(t)
	next, changed, err := m.prepareAddPartitions(10, m.producerID, m.epoch, tps)
	if err != nil || !changed {
		t.Fatalf("add partitions: %v %v", changed, err)
	}
	return next
}

func TestFirstInitProducerIDStartsAtEpochZero(t *testing.T) {
	m := initialized(t)
	if m.producerID != 7 || m.epoch != 0 || m.state != StateEmpty {
		t.Fatalf("got pid %d epoch %d state %s", m.producerID, m.epoch, m.state)
	}
}

func TestInitProducerIDAgainBumpsTheEpoch(t *testing.T) {
	m := initialized(t)
	next, out, err := m.prepareInit(5, 2000, -1, -1, noPID)
	if err != nil || out != initWrite || next.epoch != 1 || next.producerID != 7 || next.timeoutMs != 2000 {
		t.Fatalf("got %+v %v %v", next, out, err)
	}
}

func TestInitProducerIDWithAnOpenTransactionAbortsItUnderAFencedEpoch(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	next, out, err := m.prepareInit(20, 1000, -1, -1, noPID)
	if err != nil || out != initAbort {
		t.Fatalf("got %v %v", out, err)
	}
	if next.state != StatePrepareAbort || next.epoch != m.epoch+1 || !next.partitions[tp("a", 0)] {
		t.Fatalf("abort transition %+v", next)
	}
}

func TestInitProducerIDWhileCompletingIsConcurrentTransactions(t *testing.T) {
	for _, s := range []State{StatePrepareCommit, StatePrepareAbort} {
		m := ongoing(t, tp("a", 0))
		m.state = s
		if _, _, err := m.prepareInit(0, 1000, -1, -1, noPID); !errors.Is(err, ErrConcurrentTransactions) {
			t.Errorf("%s: got %v, want CONCURRENT_TRANSACTIONS", s, err)
		}
	}
}

func TestInitProducerIDWithTheCurrentEpochBumpsItKIP360(t *testing.T) {
	m := initialized(t)
	next, out, err := m.prepareInit(0, 1000, 7, 0, noPID)
	if err != nil || out != initWrite || next.epoch != 1 || next.lastEpoch != 0 {
		t.Fatalf("got %+v %v %v", next, out, err)
	}
	// The response was lost and the producer retries with what it had:
	// it gets the same epoch back, no second bump.
	again, out, err := next.prepareInit(0, 1000, 7, 0, noPID)
	if err != nil || out != initRetry || again.epoch != 1 {
		t.Fatalf("retry got epoch %d %v %v", again.epoch, out, err)
	}
}

func TestInitProducerIDWithAnOldEpochIsFenced(t *testing.T) {
	m := initialized(t)
	m, _, _ = m.prepareInit(0, 1000, -1, -1, noPID) // epoch 1
	m, _, _ = m.prepareInit(0, 1000, -1, -1, noPID) // epoch 2
	if _, _, err := m.prepareInit(0, 1000, 7, 0, noPID); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("got %v, want PRODUCER_FENCED", err)
	}
	if _, _, err := m.prepareInit(0, 1000, 99, 2, noPID); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("unknown producer id: got %v, want PRODUCER_FENCED", err)
	}
}

func TestExhaustedEpochGetsANewProducerID(t *testing.T) {
	m := initialized(t)
	m.epoch = math.MaxInt16 - 1
	next, _, err := m.prepareInit(0, 1000, -1, -1, func() (int64, error) { return 42, nil })
	if err != nil || next.producerID != 42 || next.epoch != 0 || next.lastProducerID != 7 {
		t.Fatalf("got %+v %v", next, err)
	}
}

func TestAddPartitionsStartsTheTransaction(t *testing.T) {
	m := ongoing(t, tp("a", 0), tp("b", 1))
	if m.state != StateOngoing || len(m.partitions) != 2 || m.startMs != 10 {
		t.Fatalf("got %+v", m)
	}
	// Adding what is already there writes nothing.
	if _, changed, err := m.prepareAddPartitions(11, m.producerID, m.epoch, []TopicPartition{tp("a", 0)}); err != nil || changed {
		t.Fatalf("re-adding: changed %v err %v", changed, err)
	}
	next, changed, err := m.prepareAddPartitions(12, m.producerID, m.epoch, []TopicPartition{tp("c", 0)})
	if err != nil || !changed || len(next.partitions) != 3 || next.startMs != 10 {
		t.Fatalf("adding more: %+v %v %v", next, changed, err)
	}
}

func TestAddPartitionsFromAnOldEpochIsFenced(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	if _, _, err := m.prepareAddPartitions(0, m.producerID, m.epoch-1, []TopicPartition{tp("b", 0)}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("got %v, want PRODUCER_FENCED", err)
	}
	if _, _, err := m.prepareAddPartitions(0, 99, m.epoch, []TopicPartition{tp("b", 0)}); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Fatalf("got %v, want INVALID_PRODUCER_ID_MAPPING", err)
	}
}

func TestAddPartitionsWhileCompletingIsConcurrentTransactions(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	m.state = StatePrepareCommit
	if _, _, err := m.prepareAddPartitions(0, m.producerID, m.epoch, []TopicPartition{tp("b", 0)}); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("got %v", err)
	}
}

func TestVerifyRefusesPartitionsOutsideTheTransaction(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	if err := m.verifyPartition(m.producerID, m.epoch, tp("a", 0)); err != nil {
		t.Fatalf("added partition: %v", err)
	}
	if err := m.verifyPartition(m.producerID, m.epoch, tp("a", 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("partition not added: got %v, want INVALID_TXN_STATE", err)
	}
	if err := m.verifyPartition(m.producerID, m.epoch-1, tp("a", 0)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("old epoch: got %v", err)
	}
	done, _, _ := m.prepareEnd(0, m.producerID, m.epoch, true)
	if err := done.verifyPartition(m.producerID, m.epoch, tp("a", 0)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("after EndTxn: got %v, want INVALID_TXN_STATE", err)
	}
}

func TestEndTxnCommitPreparesThenCompletes(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	next, out, err := m.prepareEnd(20, m.producerID, m.epoch, true)
	if err != nil || out != endWrite || next.state != StatePrepareCommit || !next.partitions[tp("a", 0)] {
		t.Fatalf("got %+v %v %v", next, out, err)
	}
	// While the markers are written, a retry is CONCURRENT_TRANSACTIONS
	// and the opposite outcome INVALID_TXN_STATE.
	if _, _, err := next.prepareEnd(21, m.producerID, m.epoch, true); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("retry while preparing: %v", err)
	}
	if _, _, err := next.prepareEnd(21, m.producerID, m.epoch, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort while committing: %v", err)
	}
	final := next.prepareComplete(30)
	if final.state != StateCompleteCommit || len(final.partitions) != 0 {
		t.Fatalf("complete: %+v", final)
	}
	if _, out, err := final.prepareEnd(31, m.producerID, m.epoch, true); err != nil || out != endDone {
		t.Fatalf("retry after completion: %v %v", out, err)
	}
	if _, _, err := final.prepareEnd(31, m.producerID, m.epoch, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
}

func TestEndTxnWithoutATransactionIsInvalidTxnState(t *testing.T) {
	m := initialized(t)
	if _, _, err := m.prepareEnd(0, m.producerID, m.epoch, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("got %v", err)
	}
}

func TestEndTxnFromAFencedProducerIsRefused(t *testing.T) {
	m := ongoing(t, tp("a", 0))
	if _, _, err := m.prepareEnd(0, m.producerID, m.epoch-1, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("got %v", err)
	}
}

func TestTimedOutTransactionIsAbortedWithAFencedEpoch(t *testing.T) {
	m := ongoing(t, tp("a", 0)) // started at 10, timeout 1000
	if _, ok := m.prepareTimeoutAbort(1009); ok {
		t.Fatalf("aborted before its timeout")
	}
	next, ok := m.prepareTimeoutAbort(1010)
	if !ok || next.state != StatePrepareAbort || next.epoch != m.epoch+1 {
		t.Fatalf("got %+v %v", next, ok)
	}
	// The zombie's commit is refused.
	if _, _, err := next.prepareEnd(1011, m.producerID, m.epoch, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie commit: %v", err)
	}
	if _, ok := initialized(t).prepareTimeoutAbort(1 << 40); ok {
		t.Fatalf("an id without a transaction was aborted")
	}
}

func TestStateRecordRoundTrips(t *testing.T) {
	m := ongoing(t, tp("b", 2), tp("a", 0), tp("a", 1))
	got, err := decodeValue("t", encodeValue(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.producerID != m.producerID || got.epoch != m.epoch || got.state != m.state || got.timeoutMs != m.timeoutMs ||
		got.startMs != m.startMs || len(got.partitions) != 3 || !got.partitions[tp("b", 2)] {
		t.Fatalf("round trip: %+v, want %+v", got, m)
	}
	id, ok, err := decodeKey(encodeKey("some-id"))
	if err != nil || !ok || id != "some-id" {
		t.Fatalf("key round trip: %q %v %v", id, ok, err)
	}
}

package replication_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// txnBatch is a transactional producer's batch.
func txnBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := idemBatch(n, pid, epoch, seq)
	b[22] |= 0x10
	testkit.FixCRC(b)
	return b
}

func readCommitted(rm *replication.Manager, p partition.TopicPartition, offset int64) replication.FetchResult {
	return rm.Fetch(context.Background(), replication.FetchParams{
		MaxBytes: 1 << 20, ReadCommitted: true,
		Partitions: []replication.FetchPartition{{TP: p, Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
	})[0]
}

func marker(t *testing.T, rm *replication.Manager, p partition.TopicPartition, pid int64, epoch int16, commit bool) {
	t.Helper()
	if err := rm.AppendControl(context.Background(), p, pid, epoch, 0, commit, 5*time.Second); err != nil {
		t.Fatalf("marker: %v", err)
	}
}

func TestLastStableOffsetStopsAtTheOpenTransaction(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	mustProduce(t, s.rm, p, testkit.SimpleBatch(2, 1000, 8)) // 0-1
	mustProduce(t, s.rm, p, txnBatch(3, 7, 0, 0))            // 2-4, open
	r := readCommitted(s.rm, p, 0)
	if r.Err != nil || r.LastStableOffset != 2 || r.HighWatermark != 5 {
		t.Fatalf("LSO %d HW %d err %v, want 2 and 5", r.LastStableOffset, r.HighWatermark, r.Err)
	}
	if hs := headers(t, r.Records); len(hs) != 1 || hs[0].BaseOffset != 0 {
		t.Fatalf("read_committed returned %d batches, want only the one below the LSO", len(hs))
	}
	if off, _, _, err := s.rm.ListOffset(p, -1, -1, true); err != nil || off != 2 {
		t.Fatalf("ListOffsets latest read_committed %d %v, want 2", off, err)
	}
	marker(t, s.rm, p, 7, 0, false) // abort marker at 5
	r = readCommitted(s.rm, p, 0)
	if r.LastStableOffset != 6 || len(r.AbortedTransactions) != 1 || r.AbortedTransactions[0] != (idempotent.TxnRange{ProducerID: 7, FirstOffset: 2, LastOffset: 5}) {
		t.Fatalf("after abort: LSO %d aborted %+v", r.LastStableOffset, r.AbortedTransactions)
	}
	// A committed transaction is not listed.
	mustProduce(t, s.rm, p, txnBatch(1, 7, 0, 3)) // 6
	marker(t, s.rm, p, 7, 0, true)                // 7
	r = readCommitted(s.rm, p, 6)
	if r.LastStableOffset != 8 || len(r.AbortedTransactions) != 0 {
		t.Fatalf("after commit: LSO %d aborted %+v", r.LastStableOffset, r.AbortedTransactions)
	}
}

func TestClientsCannotWriteControlBatches(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	b := partition.ControlBatch(7, 0, 0, true, 1000)
	if _, err := s.rm.Produce(context.Background(), tp("t", 0), b, -1, time.Second); !errors.Is(err, partition.ErrInvalidRecord) {
		t.Fatalf("client control batch: %v, want INVALID_RECORD", err)
	}
}

func TestTransactionalBatchNeedsVerificationOnlyToOpenATransaction(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	calls := 0
	refuse := replication.AppendOptions{VerifyTxn: func() error { calls++; return idempotent.ErrInvalidTxnState }}
	allow := replication.AppendOptions{VerifyTxn: func() error { calls++; return nil }}
	if _, err := s.rm.ProduceWithOptions(context.Background(), p, txnBatch(1, 7, 0, 0), -1, time.Second, refuse); !errors.Is(err, idempotent.ErrInvalidTxnState) {
		t.Fatalf("unverified batch: %v", err)
	}
	if _, err := s.rm.ProduceWithOptions(context.Background(), p, txnBatch(1, 7, 0, 0), -1, time.Second, allow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.rm.ProduceWithOptions(context.Background(), p, txnBatch(1, 7, 0, 1), -1, time.Second, refuse); err != nil {
		t.Fatalf("second batch of an open transaction was verified again: %v", err)
	}
	if calls != 2 {
		t.Fatalf("verifier called %d times, want 2", calls)
	}
}

func TestAbortedIndexSurvivesRestart(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	mustProduce(t, s.rm, p, txnBatch(2, 7, 0, 0))
	marker(t, s.rm, p, 7, 0, false)
	s.rm.Close() // snapshots the producer state
	rm := newManager(t, s.logs, s.ctrl)
	var r replication.FetchResult
	testkit.Poll(5*time.Second, func() error { r = readCommitted(rm, p, 0); return r.Err })
	if r.Err != nil || len(r.AbortedTransactions) != 1 || r.AbortedTransactions[0].FirstOffset != 0 {
		t.Fatalf("after restart: err %v aborted %+v", r.Err, r.AbortedTransactions)
	}
}

// A read_uncommitted fetch returns everything up to the HW but reports the
// last stable offset, as Kafka does, so a consumer can tell how far the
// stable part of the log goes.
func TestReadUncommittedFetchReportsLastStableOffset(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	mustProduce(t, s.rm, p, testkit.SimpleBatch(2, 1000, 8)) // 0-1
	mustProduce(t, s.rm, p, txnBatch(3, 7, 0, 0))            // 2-4, open
	r := fetchOne(s.rm, p, 0)
	if r.Err != nil || r.LastStableOffset != 2 || r.HighWatermark != 5 {
		t.Fatalf("LSO %d HW %d err %v, want 2 and 5", r.LastStableOffset, r.HighWatermark, r.Err)
	}
	if hs := headers(t, r.Records); len(hs) != 2 {
		t.Fatalf("read_uncommitted returned %d batches, want both", len(hs))
	}
}

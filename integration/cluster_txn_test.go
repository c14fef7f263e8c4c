package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterIdempotentAcrossFullRestart: an idempotent producer keeps
// writing while the whole cluster is stopped and started again. Its
// retries after the restart must be recognised from the producer state
// the nodes rebuilt: no duplicate, no gap among acknowledged records,
// order kept.
func TestClusterIdempotentAcrossFullRestart(t *testing.T) {
	c := startCluster(t, nil)
	const topic, parts = "idempotent-full-restart", 3
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 10)
	prod.waitMoreAcks(t, 1000, "before the restart")

	for id := int32(1); id <= 3; id++ {
		c.node(id).Stop()
	}
	// No node serves until the quorum is back, so all three start together.
	for _, b := range c.nodes {
		b.launch()
	}
	for _, b := range c.nodes {
		b.waitReady()
	}
	for p := int32(0); p < parts; p++ {
		c.waitFullISR(t, topic, p)
	}
	prod.waitMoreAcks(t, 1000, "after the restart")
	prod.stop(t)
	if fails := prod.failureSummary(); fails != "none" {
		t.Errorf("idempotent producer failed records across the restart: %s", fails)
	}
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)
	checkExactlyOnceInOrder(t, prod, got)
}

// TestClusterTxnCoordinatorKilledMidTransaction: the broker coordinating a
// transaction is killed with kill -9 after the transaction wrote records.
// Ending the transaction must then either commit or abort it cleanly: a
// read_committed consumer sees all of its records or none, never a part,
// and the partitions are not left blocked at a last stable offset below
// later records. A following transaction of the same producer commits.
func TestClusterTxnCoordinatorKilledMidTransaction(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "3"})
	const topic, txnID = "txn-coordinator-kill", "txn-coordinator-kill-id"
	c.createTopic(t, topic, 3, nil)
	ctx := testCtx(t, 3*time.Minute)

	prod := c.client(t, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(60*time.Second))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "first-%03d", i)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}

	coord := c.admin(t).FindTxnCoordinators(ctx, txnID)[txnID]
	if coord.Err != nil {
		t.Fatalf("FindTxnCoordinators: %v", coord.Err)
	}
	t.Logf("killing transaction coordinator %d", coord.NodeID)
	c.node(coord.NodeID).Kill()

	commitErr := prod.EndTransaction(ctx, kgo.TryCommit)
	committed := commitErr == nil
	t.Logf("EndTransaction(commit) after the kill: %v", commitErr)
	if !committed {
		// The client must be able to abort what it could not commit.
		if err := prod.AbortBufferedRecords(ctx); err != nil {
			t.Fatalf("abort buffered: %v", err)
		}
		if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Logf("EndTransaction(abort): %v", err)
		}
	}

	// The same producer runs a second transaction to completion.
	second := poll(10*time.Second, prod.BeginTransaction)
	if second != nil {
		t.Fatalf("BeginTransaction after the kill: %v", second)
	}
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "second-%02d", i)}).FirstErr(); err != nil {
			t.Fatalf("second transaction produce: %v", err)
		}
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second transaction commit: %v", err)
	}

	// read_committed: the second transaction's records must all show up
	// (so no partition is stuck behind the first), and the first's either
	// all or none.
	cons := c.client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	first, secondSeen := 0, 0
	for secondSeen < 10 {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("read_committed saw %d of the second transaction's 10 records (and %d of the first's)", secondSeen, first)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch string(r.Value[:5]) {
			case "first":
				first++
			case "secon":
				secondSeen++
			}
		})
	}
	// Drain what is left of the first transaction, if anything.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
		if string(r.Value[:5]) == "first" {
			first++
		}
	})
	cancel()
	switch {
	case committed && first != n:
		t.Fatalf("first transaction committed but read_committed saw %d of its %d records", first, n)
	case !committed && first != 0 && first != n:
		t.Fatalf("first transaction half visible: %d of %d records", first, n)
	}
	t.Logf("first transaction: committed=%v, %d records visible; second: %d visible", committed, first, secondSeen)
}

package integration

// Transactions (KIP-98) end to end on one broker, driven by franz-go:
// commit and abort, read_committed isolation (the last stable offset and
// the aborted-transaction list), fencing by epoch, the timeout abort, and
// a consume-transform-produce loop committing its offsets in the
// transaction.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnProducer returns a transactional kgo client for id.
func txnProducer(t *testing.T, b *broker, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return b.client(t, append([]kgo.Opt{kgo.TransactionalID(id), kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
}

// produceInTxn produces values to topic partition 0 inside one
// transaction and ends it with commit or abort.
func produceInTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction(commit=%v): %v", commit, err)
	}
}

// readCommitted consumes topic partition 0 from the start with
// read_committed until want records arrived; it then keeps polling briefly
// to catch records that must not be there.
func readCommitted(t *testing.T, b *broker, topic string, want int) []string {
	t.Helper()
	cl := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	got := pollN(t, cl, want, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
	var out []string
	for _, r := range got {
		out = append(out, string(r.Value))
	}
	return out
}

func TestTxnCommitAndAbort(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "txn-commit-abort"
	createTopic(t, b.admin(t), topic, 1, nil)
	p := txnProducer(t, b, "txn-commit-abort")

	produceInTxn(t, p, topic, true, "c1", "c2")
	produceInTxn(t, p, topic, false, "a1", "a2", "a3")
	produceInTxn(t, p, topic, true, "c3")

	want := []string{"c1", "c2", "c3"}
	if got := readCommitted(t, b, topic, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed consumer got %v, want %v", got, want)
	}
	// read_uncommitted sees the aborted records too; the markers take an
	// offset each but are never returned as records.
	got := consumeKgo(t, b, topic, []int32{0}, 6)
	if len(got) != 6 {
		t.Fatalf("read_uncommitted got %d records, want 6", len(got))
	}
	if ends := endOffsets(t, b.admin(t), topic); ends[0] != 9 {
		t.Errorf("end offset %d, want 9 (6 records and 3 markers)", ends[0])
	}

	// The aborted-transaction index survives a restart.
	b.Restart()
	if got := readCommitted(t, b, topic, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart, read_committed consumer got %v, want %v", got, want)
	}
}

func TestTxnReadCommittedWaitsForMarker(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "txn-lso"
	adm := b.admin(t)
	createTopic(t, adm, topic, 1, nil)
	p := txnProducer(t, b, "txn-lso")
	produceInTxn(t, p, topic, true, "before")

	ctx := testCtx(t, 60*time.Second)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"open1", "open2"} {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The last stable offset stops at the open transaction's first record;
	// the high watermark does not.
	committed, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, adm, topic)
	if lso := committed[topic][0].Offset; lso != 2 || ends[0] != 4 {
		t.Fatalf("read_committed latest %d, read_uncommitted latest %d; want 2 and 4", lso, ends[0])
	}

	c := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollN(t, c, 1, 30*time.Second)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	c.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
	cancel()
	if len(got) != 1 || string(got[0].Value) != "before" {
		t.Fatalf("before the commit, read_committed got %v, want only the earlier committed record", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	more := pollN(t, c, 2, 30*time.Second)
	if string(more[0].Value) != "open1" || string(more[1].Value) != "open2" {
		t.Fatalf("after the commit, read_committed got %v", more)
	}
}

func TestTxnSecondProducerFencesFirst(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "txn-fence"
	createTopic(t, b.admin(t), topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)

	p1 := txnProducer(t, b, "txn-fence")
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The second producer's InitProducerId bumps the epoch: the first's open
	// transaction is aborted and the first is fenced.
	p2 := txnProducer(t, b, "txn-fence")
	produceInTxn(t, p2, topic, true, "p2")

	err := p1.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie2")}).FirstErr()
	if err == nil {
		err = p1.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("fenced producer: got %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if got := readCommitted(t, b, topic, 1); fmt.Sprint(got) != "[p2]" {
		t.Fatalf("read_committed got %v, want [p2]", got)
	}
}

func TestTxnTimeoutAborts(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "100",
	}})
	topic := "txn-timeout"
	adm := b.admin(t)
	createTopic(t, adm, topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)

	p := txnProducer(t, b, "txn-timeout", kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The coordinator aborts it: the abort marker moves the last stable
	// offset past the record (offset 0, marker at 1).
	eventually(t, 30*time.Second, func() error {
		committed, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if lso := committed[topic][0].Offset; lso != 2 {
			return fmt.Errorf("read_committed latest offset %d, want 2", lso)
		}
		return nil
	})
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatalf("committing a transaction the coordinator aborted succeeded")
	}

	// A producer with a new session works and nothing of the abandoned
	// transaction is visible.
	p2 := txnProducer(t, b, "txn-timeout")
	produceInTxn(t, p2, topic, true, "fresh")
	if got := readCommitted(t, b, topic, 1); fmt.Sprint(got) != "[fresh]" {
		t.Fatalf("read_committed got %v, want [fresh]", got)
	}
}

func TestTxnConsumeTransformProduce(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	in, out, groupID := "txn-etl-in", "txn-etl-out", "txn-etl-group"
	adm := b.admin(t)
	createTopic(t, adm, in, 2, nil)
	createTopic(t, adm, out, 1, nil)
	const n = 200
	src := b.client(t, kgo.DefaultProduceTopic(in))
	ctx := testCtx(t, 2*time.Minute)
	for i := range n {
		src.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%03d", i))}, nil)
	}
	if err := src.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(b.Addr()),
		kgo.TransactionalID("txn-etl"),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(out),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchMaxWait(300*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < n && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollFetches(pctx)
		cancel()
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		k := 0
		fs.EachRecord(func(r *kgo.Record) {
			k++
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			done += k
		}
	}
	if done != n {
		t.Fatalf("transformed %d of %d records", done, n)
	}

	got := readCommitted(t, b, out, n)
	sort.Strings(got)
	for i, v := range got {
		if want := fmt.Sprintf("out-v%03d", i); i >= n || v != want {
			t.Fatalf("output record %d is %q, want %q (%d records)", i, v, want, len(got))
		}
	}
	if len(got) != n {
		t.Fatalf("output has %d records, want exactly %d", len(got), n)
	}
	offs, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("group committed offsets sum to %d, want %d", total, n)
	}
}

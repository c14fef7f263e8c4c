package integration

// TestSoak: a mixed-fault run. A three-node cluster, reached only through
// the fault proxies between nodes, takes kill -9, SIGSTOP/SIGCONT, node
// isolation, the bridge, one-way loss, a slow network and leader chases,
// one at a time in a random order drawn from a printed seed, while an
// acks=all idempotent producer, a transactional producer (committing most
// transactions, aborting some) and a read_committed consumer run
// throughout. After the last fault everything heals and the history is
// checked (history_check_test.go): no acknowledged or committed write lost,
// none duplicated, none unseen by the consumer, nothing aborted read,
// offsets in order.
//
//	go test -run TestSoak ./integration/                          # the short CI run (60 s of faults)
//	go test -run TestSoak -soak=5m ./integration/                 # longer
//	go test -run TestSoak -soak=5m -soak.seed=1234 ./integration/ # replay a schedule
//
// A seed replays the order and kind of faults, their targets and
// durations; it cannot replay the timing of the processes themselves.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	soakFor  = flag.Duration("soak", 0, "how long TestSoak injects faults (0: the short CI run, 60s)")
	soakSeed = flag.Uint64("soak.seed", 0, "seed of TestSoak's fault schedule (0: drawn from the clock and printed)")
)

func TestSoak(t *testing.T) {
	dur := 60 * time.Second
	if *soakFor > 0 {
		dur = *soakFor
	}
	seed := *soakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("soak: %v of faults; replay with -soak.seed=%d", dur, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	c, nf := startNetCluster(t, 3, netEnv)
	const topic, parts = "soak", 3
	c.createTopic(t, topic, parts, nil)
	h := newHistory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	live := startHistConsumer(t, c, h, "live", topic, parts)
	idem := startIdemProducer(ctx, t, c, h, topic, parts)
	txn := startTxnProducer(ctx, t, c, h, topic, parts, seed)
	waitUntil(t, 60*time.Second, "the first acknowledged writes", func() bool { return idem.acked.Load() > 100 && txn.ended.Load() > 3 })

	deadline := time.Now().Add(dur)
	for round := 1; time.Now().Before(deadline); round++ {
		soakFault(t, c, nf, rng, round, topic, parts)
		for p := range int32(parts) {
			c.waitPartitionOn(t, c.others(), topic, p, "a full ISR after the fault", func(s partState) bool {
				return s.Leader > 0 && len(s.ISR) == 3
			})
		}
		before := idem.acked.Load()
		waitUntil(t, 90*time.Second, "writes acknowledged after the fault", func() bool { return idem.acked.Load() > before+50 })
	}
	t.Logf("faults over; %d idempotent writes acknowledged, %d transactions ended", idem.acked.Load(), txn.ended.Load())

	// Stop writing, then mark each partition's end with one more
	// acknowledged record: a reader that has it has read everything.
	cancel()
	idem.wait(t)
	txn.wait(t)
	ends := writeEndMarks(t, c, h, topic, parts)
	h.final = readCommittedUntil(t, c, topic, parts, ends)
	live.waitEnds(t, ends)
	h.mu.Lock()
	h.ends = ends
	h.mu.Unlock()

	res := h.check()
	t.Logf("soak (seed %d): %s", seed, res)
	if !res.ok() {
		for _, e := range res.Examples {
			t.Errorf("  %s", e)
		}
		t.Fatalf("soak found anomalies; replay with -soak.seed=%d", seed)
	}
	compareAllReplicas(t, c, topic, parts)
}

// soakFault injects one fault, holds it for 2-5 s and undoes it.
func soakFault(t *testing.T, c *cluster, nf *netFault, rng *rand.Rand, round int, topic string, parts int32) {
	t.Helper()
	hold := time.Duration(2000+rng.IntN(3000)) * time.Millisecond
	node := int32(1 + rng.IntN(len(c.nodes)))
	kind := rng.IntN(7)
	if kind == 6 { // leader chase: the target is the leader of a partition
		p := int32(rng.IntN(int(parts)))
		node = c.waitPartitionOn(t, c.others(), topic, p, "a leader", func(s partState) bool { return s.Leader > 0 }).Leader
	}
	name := []string{"kill -9", "SIGSTOP", "isolate", "bridge around", "one-way loss from", "slow network", "kill -9 the leader"}[kind]
	target := fmt.Sprintf(" node %d", node)
	if kind == 5 {
		target = ""
	}
	t.Logf("%s round %d: %s%s for %v", time.Now().Format("15:04:05.000"), round, name, target, hold)
	switch kind {
	case 0, 6:
		c.node(node).Kill()
		time.Sleep(hold)
		c.node(node).Restart()
	case 1:
		c.pause(t, node)
		time.Sleep(hold)
		c.resume(t, node)
	case 2:
		nf.isolate(node)
		time.Sleep(hold)
		nf.heal()
	case 3:
		nf.bridge(node)
		time.Sleep(hold)
		nf.heal()
	case 4:
		for _, o := range c.others(node) {
			nf.dropOneWay(node, o)
		}
		time.Sleep(hold)
		nf.heal()
	case 5:
		d := time.Duration(10+rng.IntN(70)) * time.Millisecond
		for _, a := range c.others() {
			for _, b := range c.others(a) {
				nf.setDelay(a, b, d)
			}
		}
		time.Sleep(hold)
		nf.heal()
	}
}

func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(timeout, func() error {
		if !cond() {
			return fmt.Errorf("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("waiting for %s: no progress within %v", what, timeout)
	}
}

// ---------------------------------------------------------------------------
// Writers and readers recording into a history.

type soakIdemProducer struct {
	acked atomic.Int64
	done  chan struct{}
	cl    *kgo.Client
	cbs   sync.WaitGroup
}

// startIdemProducer writes "idem" records (acks=all, idempotent) round
// robin over the partitions, three every 10 ms, until ctx ends.
func startIdemProducer(ctx context.Context, t *testing.T, c *cluster, h *history, topic string, parts int32) *soakIdemProducer {
	p := &soakIdemProducer{done: make(chan struct{}), cl: netProducerClient(t, c)}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var seq uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for range 3 {
				id := writeID{"idem", seq}
				part := int32(seq % uint64(parts))
				seq++
				h.sent(id, part, -1)
				p.cbs.Add(1)
				p.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: part, Value: encodeValue(id, -1)}, func(r *kgo.Record, err error) {
					defer p.cbs.Done()
					if err == nil {
						h.acked(id, r.Offset)
						p.acked.Add(1)
					}
				})
			}
		}
	}()
	return p
}

// wait lets what is buffered be delivered (or fail) once the loop ended.
func (p *soakIdemProducer) wait(t *testing.T) {
	t.Helper()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Errorf("flushing the idempotent producer: %v", err)
	}
	p.cbs.Wait()
}

type soakTxnProducer struct {
	ended atomic.Int64
	done  chan struct{}
}

// startTxnProducer runs transactions of one to five records over random
// partitions until ctx ends, committing four in five and aborting the
// rest. A transaction whose commit fails has an unknown outcome; one the
// producer never asked to commit can only end aborted. After a failed end
// the client is replaced, which fences the old one and ends its
// transaction.
func startTxnProducer(ctx context.Context, t *testing.T, c *cluster, h *history, topic string, parts int32, seed uint64) *soakTxnProducer {
	p := &soakTxnProducer{done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, 1))
	newClient := func() *kgo.Client {
		return c.client(t,
			kgo.TransactionalID("soak-txn"),
			kgo.TransactionTimeout(20*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
		)
	}
	go func() {
		defer close(p.done)
		cl := newClient()
		defer func() { cl.Close() }()
		var seq uint64
		for txn := int64(1); ctx.Err() == nil; txn++ {
			if err := cl.BeginTransaction(); err != nil {
				cl.Close()
				cl = newClient()
				continue
			}
			n := 1 + rng.IntN(5)
			var recs []*kgo.Record
			for range n {
				id := writeID{"txn", seq}
				seq++
				part := int32(rng.IntN(int(parts)))
				h.sent(id, part, txn)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: encodeValue(id, txn)})
			}
			pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
			results := cl.ProduceSync(pctx, recs...)
			pcancel()
			for _, r := range results { // not in the order given
				if id, _, err := decodeValue(r.Record.Value); r.Err == nil && err == nil {
					h.acked(id, r.Record.Offset)
				}
			}
			commit := results.FirstErr() == nil && rng.IntN(5) != 0
			ectx, ecancel := context.WithTimeout(context.Background(), 30*time.Second)
			if !commit {
				_ = cl.AbortBufferedRecords(ectx)
			}
			err := cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
			ecancel()
			switch {
			case !commit:
				h.txnEnded(txn, txnAborted)
			case err == nil:
				h.txnEnded(txn, txnCommitted)
			default:
				h.txnEnded(txn, txnUnknown)
			}
			p.ended.Add(1)
			if err != nil {
				cl.Close()
				cl = newClient()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return p
}

func (p *soakTxnProducer) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(120 * time.Second):
		t.Fatal("transactional producer still running 120s after being stopped")
	}
}

// writeEndMarks writes one acknowledged record to each partition after
// every producer stopped and returns the offset after it per partition.
func writeEndMarks(t *testing.T, c *cluster, h *history, topic string, parts int32) map[int32]int64 {
	t.Helper()
	cl := netProducerClient(t, c)
	defer cl.Close()
	ends := map[int32]int64{}
	for p := range parts {
		id := writeID{"end", uint64(p)}
		h.sent(id, p, -1)
		r := &kgo.Record{Topic: topic, Partition: p, Value: encodeValue(id, -1)}
		if err := cl.ProduceSync(testCtx(t, 60*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("writing the end mark of partition %d: %v", p, err)
		}
		h.acked(id, r.Offset)
		ends[p] = r.Offset + 1
	}
	return ends
}

// histConsumer is a read_committed consumer of every partition from the
// start, recording what it is given.
type histConsumer struct {
	mu   sync.Mutex
	next map[int32]int64 // one past the last offset given, per partition
	stop context.CancelFunc
	done chan struct{}
}

func startHistConsumer(t *testing.T, c *cluster, h *history, name, topic string, parts int32) *histConsumer {
	offs := map[int32]kgo.Offset{}
	for p := range parts {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := c.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithCancel(context.Background())
	hc := &histConsumer{next: map[int32]int64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(hc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				h.read(name, hRead{r.Partition, r.Offset, r.Value})
				hc.mu.Lock()
				hc.next[r.Partition] = max(hc.next[r.Partition], r.Offset+1)
				hc.mu.Unlock()
			})
		}
	}()
	t.Cleanup(func() { cancel(); <-hc.done; cl.Close() })
	return hc
}

// waitEnds waits until the consumer was given each partition's end mark,
// then stops it.
func (hc *histConsumer) waitEnds(t *testing.T, ends map[int32]int64) {
	t.Helper()
	err := poll(60*time.Second, func() error {
		hc.mu.Lock()
		defer hc.mu.Unlock()
		for p, e := range ends {
			if hc.next[p] < e {
				return fmt.Errorf("partition %d read to %d of %d", p, hc.next[p], e)
			}
		}
		return nil
	})
	hc.stop()
	<-hc.done
	if err != nil {
		t.Errorf("the live consumer did not reach the end marks: %v", err)
	}
}

// readCommittedUntil reads every partition from the start with a fresh
// read_committed consumer up to ends.
func readCommittedUntil(t *testing.T, c *cluster, topic string, parts int32, ends map[int32]int64) []hRead {
	t.Helper()
	h := newHistory()
	hc := startHistConsumer(t, c, h, "final", topic, parts)
	hc.waitEnds(t, ends)
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.live["final"])
	return slices.DeleteFunc(out, func(r hRead) bool { return r.offset >= ends[r.partition] })
}

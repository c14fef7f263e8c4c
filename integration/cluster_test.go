package integration

// Three-node clusters under failure: leaders killed, followers paused,
// brokers stopped cleanly, with real clients writing and reading
// throughout. The harness is in cluster_harness_test.go.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seqProducerClient is the producer the cluster tests write with: acks=all
// and kgo's defaults otherwise (idempotent, retries without limit), a
// bounded buffer so the producing loop waits while no leader accepts.
func seqProducerClient(t testing.TB, c *cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return c.client(t, append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(2000),
		kgo.ProducerLinger(2 * time.Millisecond),
	}, opts...)...)
}

// TestClusterLeaderKillChase writes with acks=all (RF 3, min.insync.replicas
// 2) while the leader of partition 0 is killed with SIGKILL and restarted,
// five times, each time chasing whichever node leads now. Every
// acknowledged record must be readable afterwards at its acknowledged
// offset, and the three replicas must be identical up to the high watermark.
//
// The replicas are compared on disk, not by fetching (followers refuse
// consumer fetches): after the producer is done and the cluster idle, all
// three nodes are stopped cleanly, which checkpoints each one's HW, and the
// partition's segment files are walked batch by batch. Every batch below the
// HW must be byte-identical on the three nodes: followers store the
// leader's batches as they are (baseOffset and partitionLeaderEpoch
// included), and a replica that diverged after a crash must have truncated
// the divergent suffix before refetching.
//
// Each round waits for the full ISR before it kills, so the next leader
// comes from two in-sync replicas and min.insync.replicas can be met while
// the killed node is down.
func TestClusterLeaderKillChase(t *testing.T) {
	c := startCluster(t, nil)
	const topic, parts = "chase-kill", 3
	c.createTopic(t, topic, parts, nil)

	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 10)
	prod.waitMoreAcks(t, 1000, "before the first kill")

	for round := 1; round <= 5; round++ {
		old := c.waitFullISR(t, topic, 0)
		c.node(old.Leader).Kill()
		now := c.waitNewLeader(t, topic, 0, old.Leader)
		t.Logf("round %d: killed node %d (leader epoch %d); node %d leads at epoch %d, ISR %v",
			round, old.Leader, old.LeaderEpoch, now.Leader, now.LeaderEpoch, now.ISR)
		prod.waitMoreAcks(t, 500, fmt.Sprintf("after kill %d", round))
		c.node(old.Leader).Restart()
		c.waitFullISR(t, topic, 0)
		prod.waitMoreAcks(t, 500, fmt.Sprintf("after restart %d", round))
	}
	prod.stop(t)
	t.Logf("%d records acknowledged; failures: %s", prod.nAcked.Load(), prod.failureSummary())

	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)

	// A follower learns the HW from its next fetch response, and nothing
	// can ask a follower for its HW, so this waits rather than polls: two
	// seconds are four rounds of replica.fetch.wait.max.ms (500 ms) on an
	// idle partition. Then the nodes checkpoint their HW as they stop.
	for p := range int32(parts) {
		c.waitFullISR(t, topic, p)
	}
	ends := endOffsets(t, c.admin(t), topic)
	time.Sleep(2 * time.Second)
	c.stopAll(t)
	for p := range int32(parts) {
		key := fmt.Sprintf("%s-%d", topic, p)
		for i, b := range c.nodes {
			if hw := hwCheckpoint(t, b)[key]; hw != ends[p] {
				t.Errorf("node %d checkpointed HW %d for %s, the cluster reported end offset %d before stopping", i+1, hw, key, ends[p])
			}
		}
		compareReplicaLogs(t, c, topic, p, ends[p])
	}
}

// TestClusterPausedFollowerLeavesAndRejoinsISR freezes a follower with
// SIGSTOP while acks=all writes go on. It must leave the ISR once it has
// lagged for replica.lag.time.max.ms, after which the remaining two replicas
// satisfy min.insync.replicas=2 and acks=all writes are acknowledged again;
// after SIGCONT it must catch up and rejoin the ISR.
//
// The session timeout is raised far above the lag time so the follower
// leaves the ISR because the leader saw it lag, not because the controller
// fenced a broker that stopped heartbeating (fencing removes a broker from
// every ISR too); the test checks it is still registered and unfenced.
func TestClusterPausedFollowerLeavesAndRejoinsISR(t *testing.T) {
	c := startCluster(t, map[string]string{
		"GOKAFKA_REPLICA_LAG_TIME_MAX_MS":   "2000",
		"GOKAFKA_BROKER_SESSION_TIMEOUT_MS": "60000",
	})
	const topic, parts = "paused-follower", 1
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	prod.waitMoreAcks(t, 300, "before the pause")

	st := c.waitFullISR(t, topic, 0)
	var follower int32
	for _, id := range st.ISR {
		if id != st.Leader {
			follower = id
			break
		}
	}
	c.pause(t, follower)
	shrunk := c.waitPartition(t, topic, 0, fmt.Sprintf("paused node %d out of the ISR", follower), func(s partState) bool {
		return s.Leader > 0 && !s.inISR(follower) && len(s.ISR) == 2
	})
	t.Logf("node %d paused; ISR now %v, leader %d", follower, shrunk.ISR, shrunk.Leader)
	live, err := c.liveBrokers(shrunk.Leader)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(live, follower) {
		t.Errorf("paused node %d is no longer listed as a live broker (%v): it was fenced, so this did not test the lag rule", follower, live)
	}
	prod.waitMoreAcks(t, 500, fmt.Sprintf("with node %d paused and out of the ISR", follower))

	c.resume(t, follower)
	back := c.waitPartition(t, topic, 0, fmt.Sprintf("node %d back in the ISR", follower), func(s partState) bool {
		return s.Leader > 0 && s.inISR(follower)
	})
	t.Logf("node %d continued; ISR now %v", follower, back.ISR)
	prod.waitMoreAcks(t, 300, "after the follower rejoined")
	prod.stop(t)
	if fails := prod.failureSummary(); fails != "none" {
		t.Errorf("produce failures: %s", fails)
	}
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)

	// The rejoined follower holds everything up to the HW: compare it on
	// disk with the others (the wait as in TestClusterLeaderKillChase).
	ends := endOffsets(t, c.admin(t), topic)
	time.Sleep(2 * time.Second)
	c.stopAll(t)
	compareReplicaLogs(t, c, topic, 0, ends[0])
}

// TestClusterNotEnoughReplicas stops both followers of a partition whose
// leader stays up. acks=all writes must then be refused with
// NOT_ENOUGH_REPLICAS (ISR 1 < min.insync.replicas 2) and not appended;
// acks=1 writes still succeed; once the followers are back in the ISR,
// acks=all writes succeed again.
//
// The followers stop one after the other with SIGTERM: each controlled
// shutdown removes the stopping broker from the ISR through the quorum. Had
// both died at once, the quorum (three voters) would have lost its majority
// before it could shrink the ISR, and writes would wait instead of failing.
//
// The partition is placed so that its leader is the active controller.
// The second follower's removal is then applied on the surviving node when
// it commits. Were that follower the controller instead, the survivor might
// never apply it: the controller commits its own fencing and exits before
// the next raft heartbeat tells the survivor the entry is committed, and the
// survivor, alone, cannot elect itself to find out (reported as a broker
// bug: a shutting-down controller does not hand over leadership).
func TestClusterNotEnoughReplicas(t *testing.T) {
	c := startCluster(t, nil)
	const topic = "not-enough-replicas"
	var ctrl int32
	eventually(t, 30*time.Second, func() error {
		var err error
		if ctrl, err = c.controller(1); err == nil && ctrl <= 0 {
			err = fmt.Errorf("no active controller yet (%d)", ctrl)
		}
		return err
	})
	var followers []int32
	for id := int32(1); id <= 3; id++ {
		if id != ctrl {
			followers = append(followers, id)
		}
	}
	c.createTopicAssigned(t, topic, [][]int32{{ctrl, followers[0], followers[1]}})
	st := c.waitFullISR(t, topic, 0)
	leader := st.Leader
	if leader != ctrl {
		t.Fatalf("partition created with replicas [%d %d %d] is led by node %d", ctrl, followers[0], followers[1], leader)
	}
	for _, id := range followers {
		if now, err := c.controller(leader); err == nil && now != leader {
			t.Logf("the active controller moved to node %d; stopping node %d may leave its removal from the ISR unapplied", now, id)
		}
		c.node(id).Stop()
		c.waitPartition(t, topic, 0, fmt.Sprintf("stopped node %d out of the ISR", id), func(s partState) bool {
			return s.Leader == leader && !s.inISR(id)
		})
	}

	// The leader's own answer, without a client's retries in between.
	batch := buildBatch([][]byte{[]byte("refused-raw")}, time.Now().UnixMilli())
	ctx := testCtx(t, 30*time.Second)
	resp, err := c.probes[leader-1].SeedBrokers()[0].Request(ctx, produceRequest(9, -1, topic, 0, batch))
	if err != nil {
		t.Fatalf("acks=all produce to the leader: %v", err)
	}
	if code := producePartitionResult(t, resp).ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Errorf("acks=all produce with ISR {%d}: error code %d (%v), want NOT_ENOUGH_REPLICAS", leader, code, kerr.ErrorForCode(code))
	}

	// What a client sees once its retries are spent.
	strict := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(2))
	err = strict.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("refused-kgo")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("kgo acks=all produce with ISR {%d}: error %v, want NOT_ENOUGH_REPLICAS", leader, err)
	}

	one := c.client(t, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	var want []string
	for i := range 20 {
		v := fmt.Sprintf("acks-1-%02d", i)
		if err := one.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("acks=1 produce with only the leader up: %v", err)
		}
		want = append(want, v)
	}

	// Start both together: neither can serve before the quorum has a
	// leader, and with the leader's node they make a majority.
	for _, id := range followers {
		c.node(id).launch()
	}
	for _, id := range followers {
		c.node(id).waitReady()
	}
	c.waitFullISR(t, topic, 0)
	all := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 20 {
		v := fmt.Sprintf("acks-all-%02d", i)
		if err := all.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce after the followers rejoined: %v", err)
		}
		want = append(want, v)
	}

	got := c.consumeAll(t, topic, 1)
	var vals []string
	for _, r := range got {
		vals = append(vals, string(r.Value))
	}
	if !slices.Equal(vals, want) {
		t.Errorf("partition holds %q,\nwant %q (refused writes must not be appended)", vals, want)
	}
}

// TestClusterControlledShutdownNoProduceErrors stops the leader of a
// partition cleanly (SIGTERM), twice, while a producer with kgo's default
// retries writes with acks=all. A controlled shutdown moves leadership
// before the broker stops answering, so not a single record may fail, and
// every one must be stored exactly once.
func TestClusterControlledShutdownNoProduceErrors(t *testing.T) {
	c := startCluster(t, nil)
	const topic, parts = "controlled-shutdown", 3
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 10)
	prod.waitMoreAcks(t, 1000, "before the first stop")

	for round := 1; round <= 2; round++ {
		old := c.waitFullISR(t, topic, 0)
		c.node(old.Leader).Stop()
		now := c.waitNewLeader(t, topic, 0, old.Leader)
		t.Logf("round %d: stopped node %d; node %d leads at epoch %d, ISR %v", round, old.Leader, now.Leader, now.LeaderEpoch, now.ISR)
		prod.waitMoreAcks(t, 500, fmt.Sprintf("after stop %d", round))
		c.node(old.Leader).Restart()
		c.waitFullISR(t, topic, 0)
		prod.waitMoreAcks(t, 300, fmt.Sprintf("after restart %d", round))
	}
	prod.stop(t)
	if fails := prod.failureSummary(); fails != "none" {
		t.Errorf("produce failures across controlled shutdowns: %s", fails)
	}
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)
	checkExactlyOnceInOrder(t, prod, got)
}

// TestClusterStoppedBrokerStaysFenced: a broker that shut down cleanly must
// not be reported live afterwards. Its controlled shutdown fences it (that
// is what moves its leaderships), and nothing may unfence it until a new
// run of it registers. The session timeout is a minute, far beyond the
// wait, so only the controlled shutdown's fencing can take the broker out
// of the live list; heartbeats every 20 ms make a stray heartbeat sent
// while the broker is shutting down likely.
func TestClusterStoppedBrokerStaysFenced(t *testing.T) {
	c := startCluster(t, map[string]string{
		"GOKAFKA_BROKER_HEARTBEAT_INTERVAL_MS": "20",
		"GOKAFKA_BROKER_SESSION_TIMEOUT_MS":    "60000",
	})
	for id := int32(1); id <= 3; id++ {
		c.node(id).Stop()
		err := poll(15*time.Second, func() error {
			for _, other := range c.reachable() {
				live, err := c.liveBrokers(other)
				if err != nil {
					return err
				}
				if slices.Contains(live, id) {
					return fmt.Errorf("node %d lists the stopped node %d among the live brokers %v", other, id, live)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("after the clean shutdown of node %d: %v", id, err)
		}
		c.node(id).Restart()
		eventually(t, 30*time.Second, func() error {
			for _, other := range c.reachable() {
				if live, err := c.liveBrokers(other); err != nil || len(live) != 3 {
					return fmt.Errorf("node %d lists brokers %v (%v)", other, live, err)
				}
			}
			return nil
		})
	}
}

// checkExactlyOnceInOrder requires the consumed records to be exactly the
// produced ones: each sequence number once, in production order within each
// partition, none missing. It applies where no produce failed.
func checkExactlyOnceInOrder(t testing.TB, p *seqProducer, got []seqRecord) {
	t.Helper()
	p.mu.Lock()
	produced := p.produced
	p.mu.Unlock()
	seen := map[uint64]int{}
	last := map[int32]int64{}
	dups, disorder := 0, 0
	for _, r := range got {
		seen[r.seq]++
		if seen[r.seq] == 2 {
			if dups < 5 {
				t.Errorf("seq %d stored more than once (again at p%d@%d)", r.seq, r.partition, r.offset)
			}
			dups++
		}
		if prev, ok := last[r.partition]; ok && int64(r.seq) <= prev {
			if disorder < 5 {
				t.Errorf("partition %d: seq %d at offset %d after seq %d: order not kept", r.partition, r.seq, r.offset, prev)
			}
			disorder++
		}
		last[r.partition] = int64(r.seq)
	}
	var missing []uint64
	for s := range produced {
		if seen[s] == 0 {
			missing = append(missing, s)
		}
	}
	if dups+disorder > 0 || len(missing) > 0 {
		t.Errorf("%d records produced, %d consumed: %d duplicated, %d out of order, %d missing (first missing: %v)",
			produced, len(got), dups, disorder, len(missing), missing[:min(10, len(missing))])
	}
}

// TestClusterIdempotentFailover keeps an idempotent producer (kgo's
// default with acks=all) writing to three partitions while the leader of
// partition 0 is killed with SIGKILL three times. Requests in flight when a
// leader dies are retried against the next one, which must recognise the
// batches it already has from the producer state it replicated: no record
// may be stored twice, none acknowledged may be missing, and each
// partition keeps the order records were produced in.
func TestClusterIdempotentFailover(t *testing.T) {
	c := startCluster(t, nil)
	const topic, parts = "idempotent-failover", 3
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 10)
	prod.waitMoreAcks(t, 1000, "before the first kill")

	for round := 1; round <= 3; round++ {
		old := c.waitFullISR(t, topic, 0)
		c.node(old.Leader).Kill()
		now := c.waitNewLeader(t, topic, 0, old.Leader)
		t.Logf("round %d: killed node %d; node %d leads at epoch %d, ISR %v", round, old.Leader, now.Leader, now.LeaderEpoch, now.ISR)
		prod.waitMoreAcks(t, 500, fmt.Sprintf("after kill %d", round))
		c.node(old.Leader).Restart()
		c.waitFullISR(t, topic, 0)
	}
	prod.stop(t)
	if fails := prod.failureSummary(); fails != "none" {
		t.Errorf("idempotent producer failed records across leader kills: %s", fails)
	}
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)
	checkExactlyOnceInOrder(t, prod, got)
}

// TestClusterConsumersFollowLeaderChange: sarama's and kafka-go's partition
// consumers read part of a partition, the leader changes (SIGKILL for one,
// SIGTERM for the other), more records are written to the new leader, and
// each consumer must go on from where it was: exactly the N records, in
// offset order, none lost or repeated. The second half is produced only
// after the change so the consumer has to fetch it from the new leader
// rather than from what it had buffered.
func TestClusterConsumersFollowLeaderChange(t *testing.T) {
	c := startCluster(t, nil)
	const n = 2000
	prod := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))

	// The two clients run one after the other on the same cluster, not as
	// subtests: the nodes belong to the parent test, whose t their helpers
	// fail.
	followSarama(t, c, prod, n)
	followKafkaGo(t, c, prod, n)
}

// changeLeader moves the leadership of topic's partition 0 by stopping its
// leader (SIGKILL or SIGTERM) and waits for the new one; it returns the
// stopped node.
func changeLeader(t *testing.T, c *cluster, topic string, kill bool) int32 {
	t.Helper()
	old := c.waitFullISR(t, topic, 0)
	if kill {
		c.node(old.Leader).Kill()
	} else {
		c.node(old.Leader).Stop()
	}
	now := c.waitNewLeader(t, topic, 0, old.Leader)
	t.Logf("%s: node %d stopped (kill=%v); node %d leads at epoch %d", topic, old.Leader, kill, now.Leader, now.LeaderEpoch)
	return old.Leader
}

func followSarama(t *testing.T, c *cluster, prod *kgo.Client, n int) {
	const topic = "follow-sarama"
	c.createTopic(t, topic, 1, nil)
	sent := genRecords(n, 1, 700)
	first := produceAll(t, prod, topic, sent[:n/2])

	cfg := saramaConfig(sarama.V3_6_0_0, sarama.CompressionNone)
	cfg.Consumer.Retry.Backoff = 200 * time.Millisecond
	cfg.Metadata.Retry.Max = 100
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cons, err := sarama.NewConsumer(c.addrs(), cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition: %v", err)
	}
	defer pc.Close()
	// Errors are retried by the consumer itself; keep the last few to
	// explain a timeout.
	var errMu sync.Mutex
	var consumerErrs []string
	go func() {
		for err := range pc.Errors() {
			errMu.Lock()
			consumerErrs = append(consumerErrs[max(0, len(consumerErrs)-9):], err.Error())
			errMu.Unlock()
		}
	}()
	var got []rec
	read := func(k int) {
		t.Helper()
		timeout := time.After(90 * time.Second)
		for range k {
			select {
			case m := <-pc.Messages():
				got = append(got, fromSarama(m))
			case <-timeout:
				errMu.Lock()
				errs := slices.Clone(consumerErrs)
				errMu.Unlock()
				t.Fatalf("sarama: %d of %d records read within 90s; recent consumer errors: %q", len(got), n, errs)
			}
		}
	}
	read(n / 2)
	stopped := changeLeader(t, c, topic, true)
	second := produceAll(t, prod, topic, sent[n/2:])
	read(n / 2)
	checkRecords(t, append(first, second...), got)
	select {
	case m := <-pc.Messages():
		t.Errorf("sarama delivered a record beyond the %d produced: %v", n, fromSarama(m))
	case <-time.After(time.Second):
	}
	c.node(stopped).Restart()
	c.waitFullISR(t, topic, 0)
}

func followKafkaGo(t *testing.T, c *cluster, prod *kgo.Client, n int) {
	const topic = "follow-kafkago"
	c.createTopic(t, topic, 1, nil)
	sent := genRecords(n, 1, 701)
	first := produceAll(t, prod, topic, sent[:n/2])

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        c.addrs(),
		Topic:          topic,
		Partition:      0,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        500 * time.Millisecond,
		ReadBackoffMin: 100 * time.Millisecond,
		ReadBackoffMax: 500 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatalf("SetOffset: %v", err)
	}
	var got []rec
	read := func(k int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for range k {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go: ReadMessage after %d of %d records: %v", len(got), n, err)
			}
			got = append(got, fromKafkaGo(m))
		}
	}
	read(n / 2)
	changeLeader(t, c, topic, false)
	second := produceAll(t, prod, topic, sent[n/2:])
	read(n / 2)
	checkRecords(t, append(first, second...), got)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m, err := r.ReadMessage(ctx); err == nil {
		t.Errorf("kafka-go delivered a record beyond the %d produced: %v", n, fromKafkaGo(m))
	}
}

// TestClusterProduceThroughput measures, without asserting anything, how
// fast one kgo producer writes 1 KiB records to a three-partition topic
// with replication factor 3: acks=1 against acks=all (idempotent, kgo's
// default, and not). It only runs with GOKAFKA_BENCH=1:
//
//	GOKAFKA_BENCH=1 go test ./integration/ -run TestClusterProduceThroughput -v
func TestClusterProduceThroughput(t *testing.T) {
	if os.Getenv("GOKAFKA_BENCH") == "" {
		t.Skip("set GOKAFKA_BENCH=1 to measure produce throughput")
	}
	const recordSize, parts = 1024, 3
	dur := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("GOKAFKA_BENCH_DURATION")); err == nil {
		dur = d
	}
	value := make([]byte, recordSize)
	for i := range value {
		value[i] = byte(i*7 + i/13) // not all zeros, in case of compression
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		// Five produce requests in flight per broker, as the idempotent
		// producer has (kgo's default without idempotence is one).
		{"acks=1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5)}},
		{"acks=all", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5)}},
		{"acks=all-idempotent", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
	} {
		// A fresh cluster for each case: followers still copying the
		// previous case's backlog would take CPU from the next one.
		c := startCluster(t, nil)
		topic := "bench-" + strings.NewReplacer("=", "-").Replace(tc.name)
		c.createTopic(t, topic, parts, nil)
		cl := c.client(t, append([]kgo.Opt{
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerLinger(5 * time.Millisecond),
			kgo.MaxBufferedRecords(20000),
		}, tc.opts...)...)
		var acked, failed atomic.Int64
		start := time.Now()
		deadline := start.Add(dur)
		// Produce blocks while the buffer is full, which paces the loop;
		// what is buffered at the deadline is flushed and counted, so the
		// time includes it.
		for i := 0; time.Now().Before(deadline); i++ {
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					return
				}
				acked.Add(1)
			})
		}
		fctx, fcancel := context.WithTimeout(context.Background(), time.Minute)
		if err := cl.Flush(fctx); err != nil {
			t.Errorf("%s: flush: %v", tc.name, err)
		}
		fcancel()
		secs := time.Since(start).Seconds()
		n := acked.Load()
		t.Logf("%-20s %8d records acknowledged in %.1fs: %8.0f records/s, %6.1f MiB/s, %d failed",
			tc.name, n, secs, float64(n)/secs, float64(n)*recordSize/secs/(1<<20), failed.Load())
		cl.Close()
		var isr []string
		for p := range int32(parts) {
			if st, err := c.partition(topic, p); err == nil {
				isr = append(isr, fmt.Sprintf("p%d %v", p, st.ISR))
			}
		}
		t.Logf("%-20s ISR at the end: %s", tc.name, strings.Join(isr, ", "))
		c.stopAll(t)
	}
}

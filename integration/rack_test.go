package integration

// Racks: rack-aware replica placement, and consumers fetching from the
// closest replica (KIP-392) on a three-node cluster in racks a, b and c
// with replica.selector.class set, with franz-go and librdkafka consumers
// in rack b.

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/integration/confluentgo"
)

// fetchedFrom counts, per broker, the records a client's fetches returned.
type fetchedFrom struct {
	mu     sync.Mutex
	counts map[int32]int
}

func (f *fetchedFrom) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[int32]int{}
	}
	f.counts[meta.NodeID] += m.NumRecords
}

// take returns the counts so far and starts counting afresh.
func (f *fetchedFrom) take() map[int32]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts
	f.counts = nil
	return c
}

func TestRack_ConsumerReadsFromInSyncReplicaInItsRackThenLeaderWhenItLeavesTheISR(t *testing.T) {
	racks := map[int]string{1: "a", 2: "b", 3: "c"}
	httpAddr := map[int32]string{}
	c := startClusterWith(t, clusterOpts{
		Env: map[string]string{"GOKAFKA_REPLICA_SELECTOR_CLASS": "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		NodeEnv: func(id int) map[string]string {
			httpAddr[int32(id)] = "127.0.0.1:" + strconv.Itoa(freePort(t))
			return map[string]string{"GOKAFKA_BROKER_RACK": racks[id], "GOKAFKA_HTTP_LISTENER": httpAddr[int32(id)]}
		},
	})
	const topic = "rack-reads"
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}}) // led by 1, in rack a

	prod := c.client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
			if err := prod.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", prefix, i, err)
			}
		}
	}
	check := func(got []rec, prefix string, n int) {
		t.Helper()
		for i, r := range got[:n] {
			if want := fmt.Sprintf("%s-%d", prefix, i); string(r.Value) != want {
				t.Fatalf("record %d is %q, want %q", i, r.Value, want)
			}
		}
	}
	const n = 50
	produce("before", n)

	// librdkafka (client.rack=b) is sent to broker 2 as well: broker 2,
	// a follower no other replica fetches from, sends the topic's bytes
	// to consumers only.
	bytesOut := func(id int32) float64 {
		t.Helper()
		fams, err := scrapeMetrics(httpAddr[id])
		if err != nil {
			t.Fatalf("scraping node %d: %v", id, err)
		}
		return metricValue(fams, "kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": topic})
	}
	if v := bytesOut(2); v != 0 {
		t.Fatalf("broker 2 sent %v bytes of %s before any consumer", v, topic)
	}
	rd, err := confluentgo.Consume(testCtx(t, 60*time.Second), c.node(1).Addr(), topic, confluentgo.ConsumeOpts{Partitions: []int32{0}, Count: n, Rack: "b"})
	if err != nil {
		t.Fatalf("librdkafka consumer in rack b: %v", err)
	}
	for i, r := range rd {
		if want := fmt.Sprintf("before-%d", i); string(r.Value) != want {
			t.Fatalf("librdkafka record %d is %q, want %q", i, r.Value, want)
		}
	}
	if v := bytesOut(2); v <= 0 {
		t.Fatal("broker 2 (rack b) sent nothing to the librdkafka consumer in rack b")
	}

	var from fetchedFrom
	cons := c.client(t,
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Rack("b"), kgo.WithHooks(&from),
		// After this long on a replica, the consumer asks the leader
		// again which replica to read (Kafka's consumers do so at their
		// metadata refresh).
		kgo.RecheckPreferredReplicaInterval(time.Second),
	)
	check(pollN(t, cons, n, 60*time.Second), "before", n)
	if got := from.take(); got[2] != n || len(got) != 1 {
		t.Fatalf("records fetched per broker %v, want all %d from broker 2 (rack b)", got, n)
	}

	// Broker 2 leaves: its replica drops out of the ISR, and the consumer,
	// back at the leader, is served there; rack b has no other replica.
	c.node(2).Stop()
	c.waitPartition(t, topic, 0, "replica 2 out of the ISR", func(s partState) bool { return s.Leader == 1 && !s.inISR(2) })
	produce("after", n)
	check(pollN(t, cons, n, 90*time.Second), "after", n)
	if got := from.take(); got[1] != n || len(got) != 1 {
		t.Fatalf("records fetched per broker %v, want all %d from the leader, broker 1", got, n)
	}
}

// With brokers 1 and 2 in rack a and 3 in rack b, every partition of a
// topic created with replication factor 2 (CreateTopics, then
// CreatePartitions) has a replica in each rack; the rack-unaware
// assignment would pair 1 and 2 for some of them.
func TestRack_NewPartitionsSpreadReplicasOverRacks(t *testing.T) {
	racks := map[int]string{1: "a", 2: "a", 3: "b"}
	c := startClusterWith(t, clusterOpts{
		NodeEnv: func(id int) map[string]string { return map[string]string{"GOKAFKA_BROKER_RACK": racks[id]} },
	})
	const topic = "rack-placed"
	adm := c.admin(t)
	if _, err := adm.CreateTopic(testCtx(t, 30*time.Second), 12, 2, nil, topic); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if _, err := adm.CreatePartitions(testCtx(t, 30*time.Second), 12, topic); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		resp, err := c.metadataFrom(1, topic)
		if err != nil {
			return err
		}
		rackOf := map[int32]string{}
		for _, b := range resp.Brokers {
			if b.Rack != nil {
				rackOf[b.NodeID] = *b.Rack
			}
		}
		if len(rackOf) != 3 {
			return fmt.Errorf("brokers' racks %v, want 3 brokers with a rack", rackOf)
		}
		parts := resp.Topics[0].Partitions
		if len(parts) != 24 {
			return fmt.Errorf("%d partitions, want 24", len(parts))
		}
		for _, p := range parts {
			if len(p.Replicas) != 2 || rackOf[p.Replicas[0]] == rackOf[p.Replicas[1]] {
				t.Fatalf("partition %d has replicas %v in racks %s, %s", p.Partition, p.Replicas, rackOf[p.Replicas[0]], rackOf[p.Replicas[1]])
			}
		}
		return nil
	})
}

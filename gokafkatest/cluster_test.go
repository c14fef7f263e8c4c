package gokafkatest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/gokafkatest"
)

func newClient(t testing.TB, c *gokafkatest.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.RecordRetries(1 << 20),
		kgo.RequestTimeoutOverhead(5 * time.Second), kgo.RetryTimeout(60 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func produce(t testing.TB, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeAll reads topic's partition 0 from the start until it has n
// records and returns their values.
func consumeAll(t testing.TB, c *gokafkatest.Cluster, topic string, n int) []string {
	t.Helper()
	cl := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func seq(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func waitISR(t testing.TB, c *gokafkatest.Cluster, topic string, what string, cond func(isr []int32) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := c.Metadata().Partition(topic, 0)
		if p != nil && cond(p.ISR) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: partition %+v", what, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestThreeNodeClusterReplicatesAcknowledgedRecords(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
	if len(c.Seeds()) != 3 {
		t.Fatalf("seeds %v", c.Seeds())
	}
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 3)
	c.WaitFullISR("t")
	produce(t, cl, "t", 0, 100)
	brokers, err := kadm.NewClient(cl).ListBrokers(context.Background())
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers %v: %v", brokers, err)
	}
	for _, b := range brokers {
		if !slices.Contains(c.Seeds(), fmt.Sprintf("%s:%d", b.Host, b.Port)) {
			t.Errorf("broker %d advertises %s:%d, not one of the seeds %v", b.NodeID, b.Host, b.Port, c.Seeds())
		}
	}
	if got := consumeAll(t, c, "t", 100); !slices.Equal(got, seq(0, 100)) {
		t.Fatalf("consumed %v", got)
	}
}

func TestKilledLeaderIsReplacedAndRejoinsAfterRestart(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3), gokafkatest.BrokerProperty("min.insync.replicas", "2"))
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 3)
	c.WaitFullISR("t")
	produce(t, cl, "t", 0, 50)
	old := c.Leader("t", 0)
	c.Kill(old)
	// acks=all with min.insync 2 succeeds once another replica leads.
	produce(t, cl, "t", 50, 50)
	if l := c.Leader("t", 0); l == old || l < 0 {
		t.Fatalf("leader %d after killing %d", l, old)
	}
	c.Restart(old)
	c.WaitFullISR("t")
	if got := consumeAll(t, c, "t", 100); !slices.Equal(got, seq(0, 100)) {
		t.Fatalf("consumed %v", got)
	}
}

func TestPausedFollowerLeavesTheISRAndRejoinsOnResume(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 3)
	c.WaitFullISR("t")
	leader := c.Leader("t", 0)
	follower := leader%3 + 1
	c.Pause(follower)
	waitISR(t, c, "t", "paused follower out of the ISR", func(isr []int32) bool { return !slices.Contains(isr, follower) })
	produce(t, cl, "t", 0, 10)
	c.Resume(follower)
	c.WaitFullISR("t")
}

func TestIsolatedLeaderLosesLeadershipAndHealRestoresTheISR(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 3)
	c.WaitFullISR("t")
	old := c.Leader("t", 0)
	c.Isolate(old)
	others := slices.DeleteFunc(c.NodeIDs(), func(id int32) bool { return id == old })
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The majority side elects a new leader; ask it, not the
		// isolated node.
		p := c.Server(others[0]).Metadata().Partition("t", 0)
		if p.Leader != old && p.Leader >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader still %d", p.Leader)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Heal()
	c.WaitFullISR("t")
	produce(t, cl, "t", 0, 10)
}

func TestMoveLeaderMakesTheChosenReplicaLeader(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 3)
	c.WaitFullISR("t")
	old := c.Leader("t", 0)
	to := old%3 + 1
	c.MoveLeader("t", 0, to)
	if l := c.Leader("t", 0); l != to {
		t.Fatalf("leader %d, want %d", l, to)
	}
	c.WaitFullISR("t")
	produce(t, cl, "t", 0, 10)
}

// A killed node writes nothing more: its recovery-point checkpoint stays
// behind its log end, where a clean stop brings it up to date.
func TestKillWritesNoCheckpointWhereStopDoes(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(1))
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, 1)
	dir := c.LogDir(1)
	checkpoint := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "t ") {
				return line
			}
		}
		return ""
	}
	produce(t, cl, "t", 0, 10)
	before := checkpoint()
	c.Kill(1)
	if got := checkpoint(); got != before {
		t.Fatalf("kill rewrote the recovery point: %q, was %q", got, before)
	}
	c.Restart(1)
	if got := consumeAll(t, c, "t", 10); !slices.Equal(got, seq(0, 10)) {
		t.Fatalf("after kill and restart consumed %v", got)
	}
	c.Stop(1)
	if got := checkpoint(); got != "t 0 10" {
		t.Fatalf("clean stop left recovery point %q, want %q", got, "t 0 10")
	}
	c.Restart(1)
}

package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// AlterPartition calls that arrive while the controller is busy are
// committed together, as one metadata entry: a broker rejoining the ISR
// of thousands of partitions after a restart sends one per partition.
func TestAlterPartition_ConcurrentCallsShareOneMetadataEntry(t *testing.T) {
	const n = 4
	c := controllerWithTopicOnThree(t, n)
	ctx := context.Background()
	im := c.Image()
	// The controller is busy with another proposal while the calls come.
	c.proposeMu.Lock()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for p := range int32(n) {
		cur := im.Partition("t", p)
		wg.Go(func() {
			_, errs[p] = c.AlterPartition(ctx, AlterPartitionRequest{
				BrokerID: 1, Topic: "t", Partition: p, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: []int32{1, 2},
			})
		})
	}
	time.Sleep(200 * time.Millisecond) // let every call arrive and wait
	before := c.log.LastIndex()
	c.proposeMu.Unlock()
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("AlterPartition of t-%d: %v", p, err)
		}
	}
	if got := c.log.LastIndex() - before; got != 1 {
		t.Fatalf("%d concurrent AlterPartition calls took %d metadata entries, want 1", n, got)
	}
	for p := range int32(n) {
		if isr := c.Image().Partition("t", p).ISR; !sameMembers(isr, []int32{1, 2}) {
			t.Fatalf("t-%d ISR %v, want [1 2]", p, isr)
		}
	}
}

// Two changes of one partition waiting together: the first is committed,
// the second, made from the epoch the first replaces, is refused.
func TestAlterPartition_SecondChangeOfAPartitionInOneBatchIsRefused(t *testing.T) {
	c := controllerWithTopicOnThree(t, 1)
	ctx := context.Background()
	cur := c.Image().Partition("t", 0)
	c.proposeMu.Lock()
	var wg sync.WaitGroup
	var errs [2]error
	for i, isr := range [][]int32{{1, 2}, {1, 3}} {
		wg.Go(func() {
			_, errs[i] = c.AlterPartition(ctx, AlterPartitionRequest{
				BrokerID: 1, Topic: "t", Partition: 0, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: isr,
			})
		})
	}
	time.Sleep(200 * time.Millisecond)
	c.proposeMu.Unlock()
	wg.Wait()
	okCount := 0
	for _, err := range errs {
		if err == nil {
			okCount++
		} else if !errorsIs(err, ErrInvalidUpdateVersion) {
			t.Fatalf("refused change: %v, want INVALID_UPDATE_VERSION", err)
		}
	}
	if okCount != 1 {
		t.Fatalf("%d of two changes from the same partition epoch accepted, want 1 (%v)", okCount, errs)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// The partitions of one AlterPartition request (a broker forwards every
// ISR change pending at once in one request, as Kafka's does) are
// committed as one metadata entry, not one each.
func TestAlterPartitions_OneRequestIsOneMetadataEntry(t *testing.T) {
	const n = 5
	c := controllerWithTopicOnThree(t, n)
	ctx := context.Background()
	im := c.Image()
	var reqs []AlterPartitionRequest
	for p := range int32(n) {
		cur := im.Partition("t", p)
		reqs = append(reqs, AlterPartitionRequest{BrokerID: 1, Topic: "t", Partition: p, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: []int32{1, 3}})
	}
	// One stale request among them is refused alone.
	reqs[2].PartitionEpoch--
	before := c.log.LastIndex()
	infos, errs := c.AlterPartitions(ctx, reqs)
	if got := c.log.LastIndex() - before; got != 1 {
		t.Fatalf("one request of %d partitions took %d metadata entries, want 1", n, got)
	}
	for p := range int32(n) {
		if p == 2 {
			if !errors.Is(errs[p], ErrInvalidUpdateVersion) {
				t.Fatalf("stale change of t-2: %v", errs[p])
			}
			continue
		}
		if errs[p] != nil || !sameMembers(infos[p].ISR, []int32{1, 3}) {
			t.Fatalf("t-%d: %v, ISR %v", p, errs[p], infos[p].ISR)
		}
	}
}

// A forwarded request carries each partition once, all from one broker:
// a second change of a partition, made from the epoch the first replaces,
// waits for the next request.
func TestForwardedAlterBatch_EachPartitionOncePerRequest(t *testing.T) {
	call := func(broker int32, topic string, p int32) *alterCall {
		return &alterCall{req: AlterPartitionRequest{BrokerID: broker, Topic: topic, Partition: p}}
	}
	a0, b0, a1, a0again, other := call(1, "a", 0), call(1, "b", 0), call(1, "a", 1), call(1, "a", 0), call(2, "a", 2)
	batch, rest := nextAlterBatch([]*alterCall{a0, b0, a0again, other, a1})
	if !slices.Equal(batch, []*alterCall{a0, b0, a1}) || !slices.Equal(rest, []*alterCall{a0again, other}) {
		t.Fatalf("batch %v, rest %v", batch, rest)
	}
	batch, rest = nextAlterBatch(rest)
	if !slices.Equal(batch, []*alterCall{a0again}) || !slices.Equal(rest, []*alterCall{other}) {
		t.Fatalf("second batch %v, rest %v", batch, rest)
	}
}

// controllerWithTopicOnThree is a controller with brokers 1, 2 and 3 and
// topic t of n partitions, each replicated on all three.
func controllerWithTopicOnThree(t *testing.T, n int) *Controller {
	t.Helper()
	c := newController(t)
	addBroker(t, c, 2)
	addBroker(t, c, 3)
	assignment := make([][]int32, n)
	for i := range assignment {
		assignment[i] = []int32{1, 2, 3}
	}
	if errs := c.CreateTopics(context.Background(), []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: assignment}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	return c
}

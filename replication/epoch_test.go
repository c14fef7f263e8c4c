package replication_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
)

// KIP-903: a follower's fetches carry its broker epoch (Fetch v15
// ReplicaState), and the leader names that epoch for it when it proposes
// adding it to the ISR, so that the controller can refuse the change if
// the follower has restarted since those fetches.
func TestCluster_ISRExpansionNamesTheFollowersBrokerEpochFromItsFetches(t *testing.T) {
	c := newHandCluster(t, testReplConfig(10*time.Second), 1, 2)
	c.change(func(next *cluster.Image) {
		b := next.Brokers[2]
		b.Epoch = 42
		next.Brokers[2] = b
	})
	c.createTopic("t", []int32{1, 2}, nil)
	l := c.leader("t")
	l.mustProduce("t", "a", -1)
	// The controller takes broker 2 out of the ISR (a fence would); it
	// keeps fetching and the leader proposes it back.
	c.change(func(next *cluster.Image) {
		pi := &mutTopic(next, "t").Partitions[0]
		pi.ISR = []int32{1}
		pi.PartitionEpoch++
	})
	l.mustProduce("t", "b", 1)
	c.waitISR("t", 1, 2)
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	var expand *cluster.AlterPartitionRequest
	for i := range c.alters {
		if slices.Contains(c.alters[i].NewISR, 2) {
			expand = &c.alters[i]
		}
	}
	if expand == nil {
		t.Fatalf("no expansion among %+v", c.alters)
	}
	i := slices.Index(expand.NewISR, 2)
	if len(expand.NewISREpochs) != len(expand.NewISR) || expand.NewISREpochs[i] != 42 {
		t.Fatalf("expansion %v names epochs %v, want broker 2's epoch 42 from its fetches", expand.NewISR, expand.NewISREpochs)
	}
}

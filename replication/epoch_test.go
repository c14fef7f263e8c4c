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
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	epoch := c.image().Brokers[2].Epoch
	c.createTopic("t", []int32{1, 2}, nil)
	l := c.leader("t")
	l.mustProduce("t", "a", -1)
	// Broker 2 leaves the ISR while it keeps fetching; the leader
	// proposes it back.
	c.script("t", func(pi *cluster.PartitionInfo) {
		pi.ISR = []int32{1}
		pi.PartitionEpoch++
	})
	l.mustProduce("t", "b", 1)
	c.waitISR("t", 1, 2)
	c.altersMu.Lock()
	defer c.altersMu.Unlock()
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
	if len(expand.NewISREpochs) != len(expand.NewISR) || expand.NewISREpochs[i] != epoch {
		t.Fatalf("expansion %v names epochs %v, want broker 2's epoch %d from its fetches", expand.NewISR, expand.NewISREpochs, epoch)
	}
}

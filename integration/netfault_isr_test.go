package integration

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"
)

// TestNetUnknownISRExpansionOutcomeLosesNothing runs the schedule of
// issue 11 item 1 on five real nodes. L leads partition 0 (replicas L, G,
// F) and the metadata quorum. F falls out of the ISR, then catches up, and
// L proposes the ISR {L,G,F} to itself as controller; the quorum commits
// it, but before L hears so the network splits {L,G} | {F,X,Y}. L loses
// the quorum's leadership, its proposal fails with NOT_CONTROLLER, and it
// must not go back to the ISR {L,G}: the majority has the expansion
// committed, fences L and G and elects F, so anything L acknowledged with
// only G behind it would be lost when L and G truncate to F after the heal.
//
// How the split lands in that window: F leaves the ISR because L's
// answers to it are dropped (its fetches and heartbeats still arrive, so it
// stays unfenced, and its catching up is the next proposal); the quorum
// traffic from F, X and Y to L is delayed by a second, so every commit of
// L's takes that long while L keeps its lease (the election timeout is
// raised to 4 s); and the test splits as soon as L logs the expanding
// proposal, a moment after it went out to every voter.
func TestNetUnknownISRExpansionOutcomeLosesNothing(t *testing.T) {
	env := map[string]string{
		"GOKAFKA_CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS": "4000",
		"GOKAFKA_REPLICA_LAG_TIME_MAX_MS":               "2000",
	}
	for k, v := range netEnv {
		env[k] = v
	}
	c, nf := startNetCluster(t, 5, env)
	L := c.waitControllerOn(t, c.others())
	rest := c.others(L)
	G, F, X, Y := rest[0], rest[1], rest[2], rest[3]
	t.Logf("L=%d G=%d F=%d X=%d Y=%d", L, G, F, X, Y)
	const topic, parts = "net-item1", 1
	c.createTopicAssigned(t, topic, [][]int32{{L, G, F}})

	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the faults")

	// F out of the ISR by lag, not by fencing.
	nf.dropOneWayOn(brokerLink, L, F)
	c.waitPartitionOn(t, []int32{L}, topic, 0, fmt.Sprintf("node %d out of the ISR", F), func(s partState) bool {
		return s.Leader == L && !s.inISR(F)
	})
	waitAcks(t, c, prod, 100, "with F out of the ISR")

	// Slow commits, then let F catch up and wait for L's proposal.
	for _, id := range []int32{F, X, Y} {
		nf.setDelayOn(quorumLink, id, L, time.Second)
	}
	mark := logMark(t, c.node(L))
	nf.passOneWayOn(brokerLink, L, F)
	expanding := regexp.MustCompile(fmt.Sprintf(`proposing ISR change.*isr=\[(%[1]d,%[2]d,%[3]d|%[1]d,%[3]d,%[2]d|%[2]d,%[1]d,%[3]d|%[2]d,%[3]d,%[1]d|%[3]d,%[1]d,%[2]d|%[3]d,%[2]d,%[1]d)\]`, L, G, F))
	line, ok := waitLog(t, c.node(L), mark, expanding, 60*time.Second, nil)
	if !ok {
		t.Fatal("L never proposed to take F back")
	}
	t.Logf("L: %s", line)
	time.Sleep(200 * time.Millisecond) // the entry reaches every voter; their answers are still on the way
	nf.split([]int32{L, G}, []int32{F, X, Y})

	maj := []int32{F, X, Y}
	ctl := c.waitControllerOn(t, maj)
	now := c.waitPartitionOn(t, maj, topic, 0, fmt.Sprintf("node %d leading", F), func(s partState) bool {
		return s.Leader == F
	})
	t.Logf("majority: controller %d, partition 0 %s", ctl, now)
	// Give L time to acknowledge what it should not: the producer keeps
	// its connection to L, which still believes it leads.
	time.Sleep(3 * time.Second)
	nf.heal()
	waitISRof(t, c, topic, 0, []int32{L, G, F})
	waitAcks(t, c, prod, 200, "after the heal")
	prod.stop(t)
	t.Logf("%d records acknowledged; failures: %s", prod.nAcked.Load(), prod.failureSummary())
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)
	checkNoDuplicates(t, got)
	compareAllReplicas(t, c, topic, parts)
}

// waitISRof waits until every node sees the partition with exactly the
// replicas want in sync.
func waitISRof(t *testing.T, c *cluster, topic string, p int32, want []int32) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	c.waitPartitionOn(t, c.others(), topic, p, fmt.Sprintf("ISR %v", want), func(s partState) bool {
		return s.Leader > 0 && slices.Equal(s.ISR, want)
	})
}

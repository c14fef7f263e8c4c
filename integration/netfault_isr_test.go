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
// F); C is the active controller. F falls out of the ISR, catches up, and L
// asks C for the ISR {L,G,F}. C commits it, but its answer never reaches
// L: the network splits {L,G} | {F,C,Y}. L's request times out, and L must
// not go back to the ISR {L,G}: the majority has the expansion committed,
// fences L and G and elects F, so anything L acknowledged with only G
// behind it would be lost when L and G truncate to F after the heal.
//
// This is the forwarded variant of item 1 (the AlterPartition times out);
// the other one (L is the controller itself and loses the quorum before it
// learns the commit) cannot be timed from outside the process: raft sends
// L's entry no sooner than its followers' earlier answers arrive, so any
// delay that holds those answers back holds the entry back as well.
//
// How the split lands in the window: F leaves the ISR because L's answers
// to it are dropped (its fetches and heartbeats still arrive, so it stays
// unfenced); everything C sends to L is delayed by a second, so L learns
// of C's decisions, by answer or through the metadata log, a second late;
// and as soon as L logs the expanding proposal, everything C sends to L is
// dropped, then the split is completed.
func TestNetUnknownISRExpansionOutcomeLosesNothing(t *testing.T) {
	// A leader that drops the pending ISR change when the outcome of its
	// AlterPartition is unknown loses thousands of acknowledged records
	// here in every run.
	env := map[string]string{
		"GOKAFKA_CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS": "4000",
		"GOKAFKA_REPLICA_LAG_TIME_MAX_MS":               "2000",
	}
	for k, v := range netEnv {
		env[k] = v
	}
	c, nf := startNetCluster(t, 5, env)
	C := c.waitControllerOn(t, c.others())
	rest := c.others(C)
	L, G, F, Y := rest[0], rest[1], rest[2], rest[3]
	t.Logf("L=%d G=%d F=%d C=%d Y=%d", L, G, F, C, Y)
	const topic, parts = "net-item1", 1
	c.createTopicAssigned(t, topic, [][]int32{{L, G, F}})

	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the faults")

	// F out of the ISR by lag, not by fencing.
	nf.dropOneWayOn(brokerLink, L, F)
	c.waitPartitionOn(t, []int32{L}, topic, 0, fmt.Sprintf("node %d out of the ISR", F), func(s partState) bool {
		return s.Leader == L && !s.inISR(F)
	})
	waitAcks(t, c, prod, 100, "with F out of the ISR")

	// L hears C late; F catches up; L proposes to take F back.
	nf.setDelay(C, L, time.Second)
	mark := logMark(t, c.node(L))
	nf.passOneWayOn(brokerLink, L, F)
	expanding := regexp.MustCompile(fmt.Sprintf(`proposing ISR change.*isr=\[(%[1]d,%[2]d,%[3]d|%[1]d,%[3]d,%[2]d|%[2]d,%[1]d,%[3]d|%[2]d,%[3]d,%[1]d|%[3]d,%[1]d,%[2]d|%[3]d,%[2]d,%[1]d)\]`, L, G, F))
	line, _ := waitLog(t, c.node(L), mark, expanding, 60*time.Second, nil)
	t.Logf("L: %s", line)
	nf.dropOneWay(C, L)
	// The request reaches C, which commits it; L never hears the answer.
	c.waitPartitionOn(t, []int32{C}, topic, 0, fmt.Sprintf("node %d back in the ISR at the controller", F), func(s partState) bool {
		return s.inISR(F)
	})
	nf.split([]int32{L, G}, []int32{F, C, Y})

	maj := []int32{F, C, Y}
	ctl := c.waitControllerOn(t, maj)
	now := c.waitPartitionOn(t, maj, topic, 0, fmt.Sprintf("a leader other than %d and %d", L, G), func(s partState) bool {
		return s.Leader != L && s.Leader != G
	})
	t.Logf("majority: controller %d, partition 0 %s", ctl, now)
	if now.Leader != F {
		t.Fatalf("the majority elected %d, not the replica %d whose return to the ISR committed: the schedule did not run", now.Leader, F)
	}
	// Give L time to acknowledge what it should not: the producer keeps
	// its connection to L, which still believes it leads.
	time.Sleep(4 * time.Second)
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

package integration

// Clusters under network partitions: nodes cut from each other through the
// fault proxies of netfault_harness_test.go while clients still reach every
// node, with acks=all idempotent producers writing throughout. Each test
// ends the same way (verifyNoLossNoDup): every acknowledged record is read
// back at its acknowledged offset, no record is stored twice, and the
// replicas hold byte-identical batches below the high watermark.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// netEnv shortens the timeouts a black-holed connection waits out: a
// follower's fetch or an ISR change sent into a partition gives up after
// 3 s (plus replica.fetch.wait.max.ms) instead of 30 s.
var netEnv = map[string]string{
	"GOKAFKA_REPLICA_SOCKET_TIMEOUT_MS": "3000",
}

// netProducerClient is seqProducerClient with a 3 s produce timeout instead
// of kgo's 10 s. A node cut off from the others still answers clients,
// and, not knowing it was deposed, names itself the leader of what it led:
// a producer that asked it waits out the produce timeout before it asks
// again, possibly the same node. The short timeout keeps such stalls short.
func netProducerClient(t testing.TB, c *cluster) *kgo.Client {
	t.Helper()
	return seqProducerClient(t, c, kgo.ProduceRequestTimeout(3*time.Second))
}

// assignLed returns a replica assignment of parts partitions over all of
// c's nodes whose partition 0 is led by lead (RF 3, leaders rotating).
func assignLed(c *cluster, lead int32, parts int) [][]int32 {
	n := int32(c.size())
	var out [][]int32
	for p := range int32(parts) {
		first := (lead-1+p)%n + 1
		out = append(out, []int32{first, first%n + 1, (first+1)%n + 1})
	}
	return out
}

// TestNetIsolatedPartitionLeaderLosesNothing runs on a cluster embedded in
// the test process (gokafkatest), whose fault proxies are the same as
// startNetCluster's. It cuts the leader of partition 0
// (not the active controller) from both other nodes while producers keep
// writing and can still reach it. The cut leader cannot get acks=all writes
// replicated, so it must not acknowledge any; the majority fences it and
// elects another leader, and after the heal the old leader truncates
// whatever it appended alone and catches up.
func TestNetIsolatedPartitionLeaderLosesNothing(t *testing.T) {
	c := startEmbeddedNetCluster(t, 3)
	all := c.others()
	ctl := c.waitControllerOn(t, all)
	lead := c.others(ctl)[0]
	const topic, parts = "net-isolate-leader", 3
	c.createTopicAssigned(t, topic, assignLed(c, lead, parts))

	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the cut")
	c.emb.Isolate(lead)
	rest := c.others(lead)
	now := c.waitPartitionOn(t, rest, topic, 0, fmt.Sprintf("a leader other than the isolated node %d", lead), func(s partState) bool {
		return s.Leader > 0 && s.Leader != lead
	})
	t.Logf("node %d isolated; the majority elected node %d (epoch %d, ISR %v)", lead, now.Leader, now.LeaderEpoch, now.ISR)
	waitAcks(t, c, prod, 300, "while the old leader is cut off")
	c.emb.Heal()
	verifyNoLossNoDup(t, c, prod, topic, parts)
}

// TestNetIsolatedQuorumLeaderLosesNothing runs on a cluster embedded in
// the test process (gokafkatest). It cuts the active controller, which
// also leads partition 0, from both other nodes. The two others elect a new
// controller, fence the cut node and move its leaderships; the cut node
// loses its quorum leadership and, as a partition leader, can no longer
// get writes replicated or its ISR changed.
func TestNetIsolatedQuorumLeaderLosesNothing(t *testing.T) {
	c := startEmbeddedNetCluster(t, 3)
	ctl := c.waitControllerOn(t, c.others())
	const topic, parts = "net-isolate-controller", 3
	c.createTopicAssigned(t, topic, assignLed(c, ctl, parts))

	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the cut")
	c.emb.Isolate(ctl)
	rest := c.others(ctl)
	newCtl := c.waitControllerOn(t, rest)
	now := c.waitPartitionOn(t, rest, topic, 0, fmt.Sprintf("a leader other than the isolated node %d", ctl), func(s partState) bool {
		return s.Leader > 0 && s.Leader != ctl
	})
	t.Logf("node %d isolated; node %d controls, node %d leads partition 0 (epoch %d, ISR %v)", ctl, newCtl, now.Leader, now.LeaderEpoch, now.ISR)
	waitAcks(t, c, prod, 300, "while the old controller is cut off")
	c.emb.Heal()
	verifyNoLossNoDup(t, c, prod, topic, parts)
}

// TestNetSplitThenResplitLosesNothing runs on a cluster embedded in the
// test process (gokafkatest). It splits the cluster 1 | 2 3, then,
// without healing, 3 | 1 2: node 1 comes back while node 3 goes, so the
// ISR must have let node 1 back in (or leadership must wait for it) before
// the majority can go on. Each side of each split is checked to make
// progress, then everything heals.
func TestNetSplitThenResplitLosesNothing(t *testing.T) {
	c := startEmbeddedNetCluster(t, 3)
	const topic, parts = "net-resplit", 3
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the first split")

	for _, sp := range [][2][]int32{{{1}, {2, 3}}, {{3}, {1, 2}}} {
		lone, maj := sp[0], sp[1]
		c.emb.Partition(lone, maj)
		ctl := c.waitControllerOn(t, maj)
		for p := range int32(parts) {
			s := c.waitPartitionOn(t, maj, topic, p, fmt.Sprintf("a leader in %v", maj), func(s partState) bool {
				return slices.Contains(maj, s.Leader) && !slices.Contains(s.ISR, lone[0])
			})
			t.Logf("%s controller %d; partition %d: %s", time.Now().Format("15:04:05.000"), ctl, p, s)
		}
		waitAcks(t, c, prod, 300, fmt.Sprintf("with the majority %v", maj))
		t.Logf("%s majority %v acknowledges writes", time.Now().Format("15:04:05.000"), maj)
	}
	c.emb.Heal()
	verifyNoLossNoDup(t, c, prod, topic, parts)
}

// TestNetBridgeAndOneWayLossLoseNothing runs the fault shapes that are not a
// clean split: the bridge (1 and 3 cannot reach each other, 2 reaches
// both), then one-way loss (node 1 hears everyone, nobody hears node 1),
// then a slow network (every direction delayed).
func TestNetBridgeAndOneWayLossLoseNothing(t *testing.T) {
	c, nf := startNetCluster(t, 3, netEnv)
	const topic, parts = "net-bridge", 3
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the faults")

	nf.bridge(2)
	waitAcks(t, c, prod, 300, "across the bridge")
	nf.heal()
	c.waitPartitionOn(t, c.others(), topic, 0, "a full ISR", func(s partState) bool { return s.Leader > 0 && len(s.ISR) == 3 })

	nf.dropOneWay(1, 2)
	nf.dropOneWay(1, 3)
	c.waitPartitionOn(t, []int32{2, 3}, topic, 0, "a leader other than node 1", func(s partState) bool {
		return s.Leader > 0 && s.Leader != 1
	})
	waitAcks(t, c, prod, 300, "while node 1 is heard by no one")
	nf.heal()

	for _, a := range c.others() {
		for _, b := range c.others(a) {
			nf.setDelay(a, b, 30*time.Millisecond)
		}
	}
	waitAcks(t, c, prod, 300, "on a slow network")
	nf.heal()
	verifyNoLossNoDup(t, c, prod, topic, parts)
}

// TestNetBridgeFiveNodesLosesNothing runs Jepsen's bridge on five nodes:
// {1,2} and {4,5} cannot reach each other, node 3 reaches everyone, so a
// majority is connected around node 3 but reachability is not transitive.
// Partitions whose replicas straddle the halves shrink their ISR to their
// leader's side; one left with fewer than min.insync.replicas refuses
// acks=all writes until the heal (as in Kafka: its leader is alive and
// unfenced, so nothing moves it), so the test holds each bridge for a
// while rather than waiting for progress. Then the bridge moves to node 1
// ({2,3} | {4,5}) before the heal.
func TestNetBridgeFiveNodesLosesNothing(t *testing.T) {
	c, nf := startNetCluster(t, 5, netEnv)
	const topic, parts = "net-bridge-5", 5
	c.createTopic(t, topic, parts, nil)
	prod := startSeqProducer(t, netProducerClient(t, c), topic, parts, 5)
	waitAcks(t, c, prod, 300, "before the bridge")
	for _, b := range []struct {
		mid  int32
		a, b []int32
	}{{3, []int32{1, 2}, []int32{4, 5}}, {1, []int32{2, 3}, []int32{4, 5}}} {
		nf.bridge(b.mid)
		// Every ISR ends up within its leader's reach (the bridge node
		// reaches both sides), by shrinking or by a leader change. A
		// partition whose ISR had shrunk to one node that the controller
		// now cannot reach is left leaderless with an empty ISR, its last
		// member kept as an eligible leader replica (KIP-966): it waits
		// for that node rather than electing one that may lack acknowledged
		// records.
		reach := func(leader int32) []int32 {
			switch {
			case slices.Contains(b.a, leader):
				return append([]int32{b.mid}, b.a...)
			case slices.Contains(b.b, leader):
				return append([]int32{b.mid}, b.b...)
			}
			return c.others()
		}
		for p := range int32(parts) {
			s := c.waitPartitionOn(t, []int32{b.mid}, topic, p, "an ISR within its leader's reach, or no leader and an empty ISR", func(s partState) bool {
				if s.Leader < 0 && len(s.ISR) == 0 {
					return true
				}
				return s.Leader > 0 && !slices.ContainsFunc(s.ISR, func(id int32) bool { return !slices.Contains(reach(s.Leader), id) })
			})
			t.Logf("bridge at %d: partition %d %s", b.mid, p, s)
		}
		time.Sleep(3 * time.Second)
	}
	nf.heal()
	verifyNoLossNoDup(t, c, prod, topic, parts)
}

// verifyNoLossNoDup stops the producer once the cluster has healed and
// checks the outcome: every acknowledged record read back at its offset, no
// record twice, and every partition's replicas identical below the HW.
func verifyNoLossNoDup(t *testing.T, c *cluster, prod *seqProducer, topic string, parts int32) {
	t.Helper()
	for p := range parts {
		c.waitPartitionOn(t, c.others(), topic, p, "a full ISR after the heal", func(s partState) bool {
			return s.Leader > 0 && len(s.ISR) == 3
		})
	}
	waitAcks(t, c, prod, 200, "after the heal")
	prod.stop(t)
	t.Logf("%d records acknowledged; failures: %s", prod.nAcked.Load(), prod.failureSummary())
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)
	checkNoDuplicates(t, got)
	compareAllReplicas(t, c, topic, parts)
}

// checkNoDuplicates requires each sequence number at most once.
func checkNoDuplicates(t testing.TB, got []seqRecord) {
	t.Helper()
	at := map[uint64]seqRecord{}
	dups := 0
	for _, r := range got {
		if first, ok := at[r.seq]; ok {
			if dups < 5 {
				t.Errorf("seq %d stored twice: p%d@%d and p%d@%d", r.seq, first.partition, first.offset, r.partition, r.offset)
			}
			dups++
			continue
		}
		at[r.seq] = r
	}
	if dups > 0 {
		t.Errorf("%d records stored more than once", dups)
	}
}

// compareAllReplicas compares every partition's replicas on disk below its
// HW, once the followers have heard the final HW: two seconds are four
// rounds of replica.fetch.wait.max.ms on an idle partition, and nothing
// can ask a follower for its HW. The live processes are read; they are
// idle, and the comparison stops at the HW.
func compareAllReplicas(t *testing.T, c *cluster, topic string, parts int32) {
	t.Helper()
	assign := map[int32][]int32{}
	for p := range parts {
		s := c.waitPartitionOn(t, c.others(), topic, p, "a full ISR", func(s partState) bool {
			return s.Leader > 0 && len(s.ISR) == 3
		})
		assign[p] = s.ISR
	}
	ends := endOffsets(t, c.admin(t), topic)
	time.Sleep(2 * time.Second)
	for p := range parts {
		compareReplicasOn(t, c, assign[p], topic, p, ends[p])
	}
}

// logMark is a position in a broker's log file: waitLog looks for lines
// written after it.
func logMark(t testing.TB, b *broker) int64 {
	t.Helper()
	fi, err := os.Stat(b.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitLog waits until a line of b's log written after mark matches re and
// returns it; ok is false if stop returned true first.
func waitLog(t testing.TB, b *broker, mark int64, re *regexp.Regexp, timeout time.Duration, stop func() bool) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(b.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) > mark {
			for _, l := range strings.Split(ansiEscape.ReplaceAllString(string(data[mark:]), ""), "\n") {
				if re.MatchString(l) {
					return l, true
				}
			}
		}
		if stop != nil && stop() {
			return "", false
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line matching %q within %v", re, timeout)
	return "", false
}

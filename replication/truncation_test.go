package replication_test

// Leader-epoch truncation (DESIGN rule 7): the failure sequences of KIP-101
// and KIP-279 that truncating to the high watermark gets wrong, played on
// in-process clusters with crashes that drop unsynced bytes.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// KIP-101 scenario 1: a follower restarts with a high watermark behind its
// log (the HW reaches followers a fetch late, and its checkpoint is
// periodic) and the leader dies at once. Truncating to the HW on restart
// would throw away records the old leader acknowledged with acks=all,
// and the follower, now leader, would lose them for good.
func TestKIP101_Scenario1_HWTruncationThenImmediateElection(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	// Every append is fsynced: only the HW checkpoint lags behind.
	c.createTopic("t", []int32{1, 2}, map[string]string{"flush.messages": "1", "min.insync.replicas": "2"})
	a, b := c.nodes[1], c.nodes[2]
	a.mustProduce("t", "m1", -1)
	a.mustProduce("t", "m2", -1)

	b.crash()
	a.crash() // the leader dies before the follower is back
	b.start() // follows a dead leader: nothing to ask, nothing to do yet
	if got := b.log("t").LogEndOffset(); got != 2 {
		t.Fatalf("restarted follower's LEO %d, want 2 (both records were fsynced)", got)
	}
	// b is elected, as before KIP-966 (a Kafka 4 controller would not
	// elect a replica back from an unclean shutdown).
	c.elect("t", 2, 2)
	if c.partitionInfo("t").Leader != 2 {
		t.Fatalf("leader %d, want 2", c.partitionInfo("t").Leader)
	}
	// The new leader kept both records. Its HW cannot pass them yet: with
	// the ISR below min.insync.replicas it stands still (KIP-966) until
	// the old leader rejoins.
	kept := readLog(t, b.log("t"), b.log("t").LogEndOffset())
	for _, v := range []string{"m1", "m2"} {
		if !slices.ContainsFunc(kept, func(lb logBatch) bool { return lb.value == v }) {
			t.Fatalf("acknowledged record %q missing from the new leader's log %v", v, kept)
		}
	}

	a.start()
	c.waitISR("t", 1, 2)
	b.mustProduce("t", "m3", -1)
	c.waitConverged("t", "m1", "m2", "m3")
}

// KIP-101 scenario 2: leader and follower crash together; the follower
// loses an unsynced record the leader had synced (the leader's HW had
// passed it). The follower comes back first and is elected; it writes a
// new record at that offset. The old leader must drop its record at that
// offset when it returns, although its HW covers it: otherwise the two
// logs hold different records at the same offset forever.
func TestKIP101_Scenario2_ReplicaDivergenceAfterCrash(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	c.createTopic("t", []int32{1, 2}, nil)
	a, b := c.nodes[1], c.nodes[2]
	a.mustProduce("t", "m1", -1)
	for _, n := range []*simNode{a, b} {
		if err := n.log("t").Flush(); err != nil {
			t.Fatal(err)
		}
	}
	a.mustProduce("t", "m2", -1)
	// Wait until b has m2 too (the HW reaches it on its next fetch), then
	// make m2 and the HW durable on a only.
	eventually(t, "the follower has m2 and the HW", func() bool { return b.log("t").HighWatermark() == 2 })
	if err := a.log("t").Flush(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*simNode{a, b} {
		if err := n.logs.WriteCheckpoints(); err != nil {
			t.Fatal(err)
		}
	}
	a.crash()
	b.crash()

	b.start()
	if got := b.log("t").LogEndOffset(); got != 1 {
		t.Fatalf("b's LEO after the crash %d, want 1 (m2 was never synced there)", got)
	}
	// b is elected, as before KIP-966 (see scenario 1).
	c.elect("t", 2, 2)
	b.mustProduce("t", "m3", -1) // offset 1, leader epoch 1

	// The leader tells a fetcher whose last epoch ends past its own where
	// the logs part (KIP-320 DivergingEpoch), instead of sending records.
	res := b.rm.Fetch(context.Background(), replication.FetchParams{FromFollower: true, ReplicaID: 1, MaxBytes: 1 << 20,
		Partitions: []replication.FetchPartition{{TP: partition.TopicPartition{Topic: "t"}, Offset: 2, MaxBytes: 1 << 20,
			CurrentLeaderEpoch: 1, LastFetchedEpoch: 0, HasLastFetchedEpoch: true, LogStartOffset: 0}}})
	if r := res[0]; r.Err != nil || !r.HasDivergingEpoch || r.DivergingEpoch != 0 || r.DivergingEndOffset != 1 || len(r.Records) != 0 {
		t.Fatalf("fetch with a diverged last epoch: err %v diverging %v (%d, %d), %d bytes; want epoch 0 ending at 1 and no records",
			r.Err, r.HasDivergingEpoch, r.DivergingEpoch, r.DivergingEndOffset, len(r.Records))
	}

	// What a recovered from disk, read before its fetcher can truncate.
	a.opened = func() {
		if got := a.logs.Get(partition.TopicPartition{Topic: "t"}).LogEndOffset(); got != 2 {
			t.Errorf("a's LEO after the crash %d, want 2 (m2 was synced there)", got)
		}
	}
	a.start()
	a.opened = nil
	c.waitISR("t", 1, 2)
	c.waitConverged("t", "m1", "m3")
}

// KIP-279: leaders change twice in quick succession, each writing records
// the others never see, and the last one has not written in its epoch yet
// when the others come back. A follower whose last epoch the new leader
// never had must be told the largest epoch they share (and ask again if it
// does not hold that one), not be left with its own tail.
func TestKIP279_FastDoubleFailover(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"flush.messages": "1", "min.insync.replicas": "1"})
	n1, n2, n3 := c.nodes[1], c.nodes[2], c.nodes[3]
	n1.mustProduce("t", "m0", -1)
	c.waitConverged("t", "m0")

	n2.stop()
	n3.stop()
	n1.mustProduce("t", "e0-a", 1) // only on 1
	n1.mustProduce("t", "e0-b", 1)

	n1.stop()
	n2.start()
	c.elect("t", 2, 2, 3) // 2 leads epoch 1
	if li := c.partitionInfo("t"); li.Leader != 2 || li.LeaderEpoch != 1 {
		t.Fatalf("leader %d epoch %d, want 2 at 1", li.Leader, li.LeaderEpoch)
	}
	n2.mustProduce("t", "e1-a", 1) // only on 2

	n2.stop()
	n3.start()
	c.elect("t", 3, 3) // 3 leads epoch 2, has written nothing in it
	if li := c.partitionInfo("t"); li.Leader != 3 || li.LeaderEpoch != 2 {
		t.Fatalf("leader %d epoch %d, want 3 at 2", li.Leader, li.LeaderEpoch)
	}
	// Its epoch starts where it became leader even before it writes in
	// it: asked about epoch 1, which it never had, it answers epoch 0
	// ending at 1, not "undefined".
	tp := partition.TopicPartition{Topic: "t"}
	if e, end, err := n3.rm.OffsetForLeaderEpoch(tp, 2, 1); err != nil || e != 0 || end != 1 {
		t.Fatalf("OffsetForLeaderEpoch(1) on the new leader: (%d, %d, %v), want (0, 1)", e, end, err)
	}
	if e, end, err := n3.rm.OffsetForLeaderEpoch(tp, -1, 2); err != nil || e != 2 || end != 1 {
		t.Fatalf("OffsetForLeaderEpoch(2) on the new leader: (%d, %d, %v), want (2, 1)", e, end, err)
	}

	n1.start()
	n2.start()
	c.waitISR("t", 1, 2, 3)
	c.checkLogsAgree("t", "m0")
	for _, n := range []*simNode{n1, n2} {
		if got := n.log("t").LogEndOffset(); got != 1 {
			t.Fatalf("broker %d LEO %d after truncation, want 1 (only m0 is shared)", n.id, got)
		}
	}
	n3.mustProduce("t", "e2-a", -1)
	c.waitConverged("t", "m0", "e2-a")
}

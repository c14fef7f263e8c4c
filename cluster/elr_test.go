package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Eligible leader replicas (KIP-966), as Kafka 4.x keeps them.

func TestKIP966_ISRShrinkBelowMinISRKeepsLeftReplicasAsELR(t *testing.T) {
	live := func(int32) bool { return true }
	p := PartitionInfo{Leader: 1, PartitionEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	p, _ = changePartition(p, partitionTarget{isr: []int32{1, 2}, live: live, minISR: 2})
	if p.ELR != nil {
		t.Fatalf("ISR %v at min ISR 2 has ELR %v", p.ISR, p.ELR)
	}
	p, _ = changePartition(p, partitionTarget{isr: []int32{1}, live: live, minISR: 2})
	if !slices.Equal(p.ISR, []int32{1}) || !slices.Equal(p.ELR, []int32{2}) || p.Leader != 1 || p.PartitionEpoch != 5 {
		t.Fatalf("after shrinking below min ISR: %+v, want ISR [1] ELR [2]", p)
	}
	// Back at min ISR, the ELR is cleared.
	p, _ = changePartition(p, partitionTarget{isr: []int32{1, 3}, live: live, minISR: 2})
	if !slices.Equal(p.ISR, []int32{1, 3}) || p.ELR != nil {
		t.Fatalf("after expanding to min ISR: %+v, want ISR [1 3] and no ELR", p)
	}
}

func TestKIP966_EmptyISRElectsFromELR(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false, 3: true},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2}})
	ch := fenceChanges(im, 1, pol(never, 2))
	if len(ch) != 1 {
		t.Fatalf("changes %+v", ch)
	}
	n := ch[0].Next
	if n.Leader != 2 || n.LeaderEpoch != 5 || !slices.Equal(n.ISR, []int32{2}) || !slices.Equal(n.ELR, []int32{1}) || n.LastKnownELR != nil {
		t.Fatalf("next %+v, want 2 elected from the ELR with ISR [2] and 1 kept in the ELR", n)
	}
}

func TestKIP966_RestartedBrokerLeavesELR(t *testing.T) {
	im := electionImage(map[int32]bool{1: true, 2: true, 3: true},
		PartitionInfo{Partition: 0, Leader: -1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{1, 2, 3}, ISR: nil, ELR: []int32{1, 2}, LastKnownELR: []int32{1}})
	ch := restartChanges(im, 2, pol(never, 2))
	if len(ch) != 1 || !slices.Equal(ch[0].Next.ELR, []int32{1}) || ch[0].Next.Leader != -1 || !slices.Equal(ch[0].Next.LastKnownELR, []int32{1}) {
		t.Fatalf("changes %+v, want 2 out of the ELR and the partition still offline", ch)
	}
	// A fence alone (no restart) keeps a fenced broker in the ELR.
	if ch := fenceChanges(im, 2, pol(never, 2)); len(ch) != 0 {
		t.Fatalf("fencing a fenced ELR member changed %+v", ch)
	}
}

// With ISR and ELR both empty the last leader, once back, leads again: no
// replica can hold more than it did. Without ELR members to prefer, this
// is the election gokafka made before ELR existed.
func TestKIP966_LastKnownLeaderLeadsWhenISRAndELREmpty(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}})
	fenced := fenceChanges(im, 1, pol(never, 1))[0].Next
	if fenced.Leader != -1 || len(fenced.ISR) != 0 || !slices.Equal(fenced.ELR, []int32{1}) || !slices.Equal(fenced.LastKnownELR, []int32{1}) {
		t.Fatalf("fenced: %+v", fenced)
	}
	im = electionImage(map[int32]bool{1: true, 2: false}, fenced)
	restarted := restartChanges(im, 1, pol(never, 1))[0].Next
	if restarted.ELR != nil || !slices.Equal(restarted.LastKnownELR, []int32{1}) {
		t.Fatalf("restarted: %+v", restarted)
	}
	im = electionImage(map[int32]bool{1: true, 2: false}, restarted)
	if ch := unfenceChanges(im, 2, pol(never, 1)); len(ch) != 0 {
		t.Fatalf("2 (never in ISR or ELR) elected: %+v", ch)
	}
	im = electionImage(map[int32]bool{1: false, 2: false}, restarted)
	ch := unfenceChanges(im, 1, pol(never, 1))
	if len(ch) != 1 || ch[0].Next.Leader != 1 || !slices.Equal(ch[0].Next.ISR, []int32{1}) || ch[0].Next.LastKnownELR != nil {
		t.Fatalf("changes %+v, want 1 leading again", ch)
	}
}

func TestKIP966_UncleanElectionClearsELR(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: true, 3: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2}})
	n := fenceChanges(im, 1, pol(always, 2))[0].Next
	if n.Leader != 3 || !slices.Equal(n.ISR, []int32{3}) || n.ELR != nil || n.LastKnownELR != nil {
		t.Fatalf("next %+v, want 3 elected uncleanly with ELR cleared", n)
	}
}

// Issue scenario (last replica standing): RF 2, min.insync.replicas 2.
// Broker 3 falls out of the ISR, leaving 2 alone; 2's HW stops there, so 3
// holds everything committed. Then 2 restarts uncleanly and may have lost
// its unflushed tail. It must not lead again over 3.
func TestKIP966_LastISRMemberRestartingUncleanlyDoesNotLeadOverELR(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 1, Incarnation: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 3}},
		Configs: map[string]*string{"min.insync.replicas": str("2")}})
	shrunk, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, Topic: "t", Partition: 0, NewISR: []int32{2}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shrunk.ELR, []int32{3}) || !slices.Equal(c.Image().Partition("t", 0).ELR, []int32{3}) {
		t.Fatalf("after the shrink: %+v, want ELR [3]", shrunk)
	}
	// Broker 2 restarts: a new incarnation registers.
	sessionExpired(c, 2)
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "h", Port: 1, Incarnation: "b"}); err != nil {
		t.Fatal(err)
	}
	p := *c.Image().Partition("t", 0)
	if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) || contains32(p.ELR, 2) {
		t.Fatalf("after 2 restarted: %+v, want 3 leading from the ELR and 2 in neither ISR nor ELR", p)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("t", 0); p.Leader != 3 {
		t.Fatalf("after 2 was unfenced: leader %d, want 3", p.Leader)
	}
}

// As Kafka with ELR on: changing a topic's min.insync.replicas clears its
// ELR (chosen under the old value: with a lower one the HW moves on
// without its members), and so does any cluster-wide change of it;
// per-broker values are refused so every controller elects by one value.
func TestKIP966_MinISRChangeClearsELR(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 1, Incarnation: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		mustCreate(t, c, TopicSpec{Name: name, NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 3}},
			Configs: map[string]*string{"min.insync.replicas": str("2")}})
		if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, Topic: name, Partition: 0, NewISR: []int32{2}}); err != nil {
			t.Fatal(err)
		}
	}
	elr := func(name string) []int32 { return c.Image().Partition(name, 0).ELR }
	if !slices.Equal(elr("a"), []int32{3}) || !slices.Equal(elr("b"), []int32{3}) {
		t.Fatalf("ELRs %v %v, want [3] each", elr("a"), elr("b"))
	}
	// Another config of the topic leaves the ELR alone.
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"min.insync.replicas": "2", "retention.ms": "5"}, false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(elr("a"), []int32{3}) {
		t.Fatalf("ELR %v after an unrelated config change, want [3]", elr("a"))
	}
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"min.insync.replicas": "1"}, false); err != nil {
		t.Fatal(err)
	}
	if elr("a") != nil || !slices.Equal(elr("b"), []int32{3}) {
		t.Fatalf("after a's min.insync.replicas changed: ELRs %v %v, want none and [3]", elr("a"), elr("b"))
	}
	if err := c.SetBrokerConfigs(ctx, "1", map[string]string{"min.insync.replicas": "1"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("per-broker min.insync.replicas: got %v, want ErrInvalidConfig", err)
	}
	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"min.insync.replicas": "2"}, false); err != nil {
		t.Fatal(err)
	}
	if elr("b") != nil {
		t.Fatalf("ELR %v after the cluster-wide min.insync.replicas was set, want none", elr("b"))
	}
}

// A restart proven clean (the previous run's broker epoch, as Kafka's
// PreviousBrokerEpoch) keeps the broker in the ELR: its logs were flushed.
// Any other restart takes it out.
func TestKIP966_CleanRestartKeepsELRMembershipUncleanDoesNot(t *testing.T) {
	for _, clean := range []bool{true, false} {
		c := newController(t)
		ctx := context.Background()
		for _, id := range []int32{2, 3} {
			if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 1, Incarnation: "a"}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 3}},
			Configs: map[string]*string{"min.insync.replicas": str("2")}})
		if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, Topic: "t", Partition: 0, NewISR: []int32{2}}); err != nil {
			t.Fatal(err)
		}
		// Broker 3, in the ELR, shuts down and comes back.
		if _, _, err := c.BrokerHeartbeat(ctx, 3, true, nil); err != nil {
			t.Fatal(err)
		}
		prev := int64(-1)
		if clean {
			prev = c.Image().Brokers[3].Epoch
		}
		if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 3, Host: "h", Port: 1, Incarnation: "b", PreviousEpoch: prev}); err != nil {
			t.Fatal(err)
		}
		if got := c.Image().Partition("t", 0).ELR; clean != slices.Equal(got, []int32{3}) {
			t.Fatalf("clean restart %v: ELR %v", clean, got)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, 3, false, nil); err != nil {
			t.Fatal(err)
		}
		// The ISR's last member fails: 3 leads only if it is still eligible.
		if _, _, err := c.BrokerHeartbeat(ctx, 2, true, nil); err != nil {
			t.Fatal(err)
		}
		want := int32(-1)
		if clean {
			want = 3
		}
		if p := c.Image().Partition("t", 0); p.Leader != want {
			t.Fatalf("clean restart %v: after 2 stopped: %+v, want leader %d", clean, p, want)
		}
	}
}

func TestCleanShutdownRecordIsTakenOnce(t *testing.T) {
	dir := t.TempDir()
	c := openController(t, testConfig(), dir)
	epoch := c.Image().Brokers[1].Epoch
	if c.previousEpoch != -1 {
		t.Fatalf("first run's previous epoch %d, want -1", c.previousEpoch)
	}
	if err := c.RecordCleanShutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r := openController(t, testConfig(), dir)
	if r.previousEpoch != epoch {
		t.Fatalf("after a clean shutdown: previous epoch %d, want %d", r.previousEpoch, epoch)
	}
	if got := r.Image().Brokers[1].Epoch; got <= epoch {
		t.Fatalf("new run's epoch %d, want above %d", got, epoch)
	}
	if err := r.Close(); err != nil { // no record: a crash, as far as the next run knows
		t.Fatal(err)
	}
	if again := openQuorum(t, testConfig(), dir); again.previousEpoch != -1 {
		t.Fatalf("after a shutdown that recorded nothing: previous epoch %d, want -1", again.previousEpoch)
	}
}

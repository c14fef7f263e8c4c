package cluster

import (
	"slices"
	"testing"
)

func electionImage(brokers map[int32]bool, parts ...PartitionInfo) *Image {
	im := &Image{Brokers: map[int32]BrokerInfo{}, Topics: map[string]*TopicInfo{}}
	for id, fenced := range brokers {
		im.Brokers[id] = BrokerInfo{NodeID: id, Fenced: fenced}
	}
	im.Topics["t"] = &TopicInfo{Name: "t", Partitions: parts}
	return im
}

func never(*TopicInfo) bool  { return false }
func always(*TopicInfo) bool { return true }

// pol is an election policy with min.insync.replicas n for every topic.
func pol(unclean func(*TopicInfo) bool, n int) policy {
	return policy{unclean: unclean, minISR: func(*TopicInfo) int { return n }}
}

func TestRule6_FencedLeaderReplacedFromISRWithNewEpoch(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false, 3: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}})
	ch := fenceChanges(im, 1, pol(never, 1))
	if len(ch) != 1 {
		t.Fatalf("changes: %+v", ch)
	}
	n := ch[0].Next
	// 2 is a replica but not in the ISR: the leader must be 3.
	if n.Leader != 3 || n.LeaderEpoch != 5 || n.PartitionEpoch != 8 || !slices.Equal(n.ISR, []int32{3}) {
		t.Fatalf("next %+v", n)
	}
	if ch[0].ExpectPartitionEpoch != 7 {
		t.Fatalf("expected partition epoch %d", ch[0].ExpectPartitionEpoch)
	}
}

func TestRule6_NoLeaderOutsideISRWithoutUncleanElection(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1}})
	n := fenceChanges(im, 1, pol(never, 1))[0].Next
	// The last ISR member leaves the ISR for the ELR (KIP-966) and is
	// remembered as the last leader, so it can come back as leader.
	if n.Leader != -1 || n.LeaderEpoch != 1 || len(n.ISR) != 0 || !slices.Equal(n.ELR, []int32{1}) || !slices.Equal(n.LastKnownELR, []int32{1}) {
		t.Fatalf("next %+v", n)
	}
}

func TestRule6_UncleanElectionPicksLiveReplicaOutsideISR(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1}})
	n := fenceChanges(im, 1, pol(always, 1))[0].Next
	if n.Leader != 2 || n.LeaderEpoch != 1 || !slices.Equal(n.ISR, []int32{2}) {
		t.Fatalf("next %+v", n)
	}
}

func TestFencedFollowerLeavesISRWithoutLeaderChange(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false, 3: false},
		PartitionInfo{Partition: 0, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	n := fenceChanges(im, 2, pol(never, 1))[0].Next
	if n.Leader != 1 || n.LeaderEpoch != 2 || n.PartitionEpoch != 4 || !slices.Equal(n.ISR, []int32{1, 3}) {
		t.Fatalf("next %+v", n)
	}
}

func TestFenceSkipsAlreadyFencedCandidates(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: true, 3: false},
		PartitionInfo{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	n := fenceChanges(im, 1, pol(never, 1))[0].Next
	if n.Leader != 3 {
		t.Fatalf("leader %d, want 3 (2 is fenced)", n.Leader)
	}
}

func TestFenceIgnoresPartitionsWithoutTheBroker(t *testing.T) {
	im := electionImage(map[int32]bool{1: false, 2: false, 3: false},
		PartitionInfo{Partition: 0, Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2, 3}})
	if ch := fenceChanges(im, 1, pol(never, 1)); len(ch) != 0 {
		t.Fatalf("changes %+v", ch)
	}
}

func TestUnfenceRestoresOfflinePartitionToISRMember(t *testing.T) {
	offline := PartitionInfo{Partition: 0, Leader: -1, LeaderEpoch: 3, PartitionEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}}
	// Broker 2 comes back while 1, the ISR, is still fenced.
	im := electionImage(map[int32]bool{1: true, 2: false}, offline)
	if ch := unfenceChanges(im, 2, pol(never, 1)); len(ch) != 0 {
		t.Fatalf("2 is outside the ISR, got %+v", ch)
	}
	if ch := unfenceChanges(im, 2, pol(always, 1)); len(ch) != 1 || ch[0].Next.Leader != 2 || !slices.Equal(ch[0].Next.ISR, []int32{2}) {
		t.Fatalf("unclean: %+v", ch)
	}
	im = electionImage(map[int32]bool{1: false, 2: false}, offline)
	ch := unfenceChanges(im, 1, pol(never, 1))
	if len(ch) != 1 || ch[0].Next.Leader != 1 || ch[0].Next.LeaderEpoch != 4 || ch[0].Next.PartitionEpoch != 6 {
		t.Fatalf("changes %+v", ch)
	}
}

func TestChangePartitionsRefusesStalePartitionEpoch(t *testing.T) {
	st := NewState()
	if err := st.Apply(1, &Command{Type: CmdCreateTopic, Topic: &TopicInfo{Name: "t", ID: TopicID{1}, Partitions: []PartitionInfo{{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}}); err != nil {
		t.Fatal(err)
	}
	next := PartitionInfo{Partition: 0, Leader: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}
	if err := st.Apply(2, &Command{Type: CmdChangePartitions, Changes: []PartitionChange{{Topic: "t", ExpectPartitionEpoch: 0, Next: next}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(3, &Command{Type: CmdChangePartitions, Changes: []PartitionChange{{Topic: "t", ExpectPartitionEpoch: 0, Next: next}}}); err == nil {
		t.Fatal("a change computed from a stale partition epoch was applied")
	}
}

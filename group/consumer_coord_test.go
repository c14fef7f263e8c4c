package group

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit/fake"
)

// imageWithTopic is offsetsImage plus a topic "t" of n partitions.
func imageWithTopic(leader, epoch int32, n int) *cluster.Image {
	im := offsetsImage(leader, epoch)
	t := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{9}}
	for p := range n {
		t.Partitions = append(t.Partitions, cluster.PartitionInfo{Partition: int32(p), Leader: 1, Replicas: []int32{1}, ISR: []int32{1}})
	}
	im.Topics["t"] = t
	im.IDs = map[cluster.TopicID]string{t.ID: "t"}
	return im
}

func joinHB(id string) ConsumerHeartbeat {
	return ConsumerHeartbeat{Version: 1, MemberID: id, RebalanceTimeoutMs: 10000, TopicNames: []string{"t"}, Owned: map[cluster.TopicID][]int32{}}
}

// A group id is either classic or consumer; while the group has members,
// the other protocol is refused when the classic members' metadata is no
// consumer subscription (online migration, migrate_test.go, needs one).
func TestConsumerGroupRefusesClassicProtocolWhileItHasMembers(t *testing.T) {
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 2))
	c := newTestCoordinator(t, meta, fake.NewLog())
	waitLoaded(t, c, "g")
	r := c.ConsumerGroupHeartbeat("g", joinHB("m1"))
	if r.Err != nil || r.MemberEpoch != 1 || len(r.Assignment[cluster.TopicID{9}]) != 2 {
		t.Fatalf("join = %+v", r)
	}
	jr := c.JoinGroup(context.Background(), "g", JoinParams{SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}})
	if !errors.Is(jr.Err, ErrInconsistentProtocol) {
		t.Fatalf("classic JoinGroup: %v", jr.Err)
	}
	if s, err := c.DescribeGroup("g"); err != nil || s.State != StateDead || len(s.Members) != 0 {
		t.Fatalf("DescribeGroups below v6: %+v %v, want Dead without error", s, err)
	}
	gs, _ := c.ListGroups(nil)
	if len(gs) != 1 || gs[0].Type != "consumer" || gs[0].StateName != "Stable" || gs[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups = %+v", gs)
	}
	if errs := c.DeleteGroups(context.Background(), []string{"g"}); !errors.Is(errs[0], ErrNonEmptyGroup) {
		t.Fatalf("DeleteGroups with a member: %v", errs[0])
	}
	d, _, err := c.DescribeConsumerGroup("g")
	if err != nil || d.State != ConsumerStable || len(d.Members) != 1 || d.AssignorName != AssignorUniform {
		t.Fatalf("describe = %+v %v", d, err)
	}
	if r := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m1", MemberEpoch: -1}); r.Err != nil {
		t.Fatalf("leave: %v", r.Err)
	}
	// Empty now: a classic member may take the id over.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jr = c.JoinGroup(ctx, "g", JoinParams{SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}})
	if jr.Err != nil {
		t.Fatalf("classic JoinGroup to an empty consumer group: %v", jr.Err)
	}
	r = c.ConsumerGroupHeartbeat("g", joinHB("m2"))
	if !errors.Is(r.Err, ErrGroupIDNotFound) {
		t.Fatalf("consumer heartbeat to a classic group with members: %v", r.Err)
	}
	if _, _, err := c.DescribeConsumerGroup("g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %v", err)
	}
}

// Commits of a consumer group's members are checked by member epoch; after
// a coordinator change the group's records bring its members back with
// their epochs and assignments: they keep heartbeating and committing at
// their epoch, and are not fenced or asked to rejoin.
func TestConsumerGroupKeepsMembersEpochsAndAssignmentAcrossFailover(t *testing.T) {
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 2))
	c := newTestCoordinator(t, meta, fake.NewLog())
	waitLoaded(t, c, "g")
	r := c.ConsumerGroupHeartbeat("g", joinHB("m1"))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	commit := func(epoch int32, version int16) error {
		return c.CommitOffsets(context.Background(), "g", CommitParams{MemberID: "m1", Generation: epoch, APIVersion: version, Offsets: []CommitOffset{
			{TP: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: 7, LeaderEpoch: -1, ExpireTimestamp: -1}},
		}})[0]
	}
	if err := commit(r.MemberEpoch+1, 9); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Fatalf("commit at a wrong epoch: %v", err)
	}
	if err := commit(r.MemberEpoch, 8); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("commit at v8: %v", err)
	}
	if err := commit(r.MemberEpoch, 9); err != nil {
		t.Fatalf("commit: %v", err)
	}
	txnCommit := func(epoch int32) error {
		return c.TxnCommitOffsets(context.Background(), "g", TxnCommitParams{ProducerID: 5, ProducerEpoch: 0, CommitParams: CommitParams{MemberID: "m1", Generation: epoch, APIVersion: 3, Offsets: []CommitOffset{
			{TP: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: 6, LeaderEpoch: -1, ExpireTimestamp: -1}},
		}}})[0]
	}
	if err := txnCommit(r.MemberEpoch + 1); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("transactional commit at a wrong epoch: %v, want ILLEGAL_GENERATION", err)
	}
	if err := txnCommit(r.MemberEpoch); err != nil {
		t.Fatalf("transactional commit: %v", err)
	}
	m1 := "m1"
	if _, err := c.FetchOffsetsAs("g", &m1, r.MemberEpoch+1, nil); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Fatalf("fetch at a wrong epoch: %v", err)
	}
	// A second member joins: m1 gives up a partition (revocation), m2
	// takes it once released.
	r2 := c.ConsumerGroupHeartbeat("g", joinHB("m2"))
	if r2.Err != nil {
		t.Fatal(r2.Err)
	}
	r = c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m1", MemberEpoch: r.MemberEpoch, Owned: r.Assignment})
	r = c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m1", MemberEpoch: r.MemberEpoch, Owned: r.Assignment})
	r2 = c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m2", MemberEpoch: r2.MemberEpoch, Owned: map[cluster.TopicID][]int32{}})
	if r.Err != nil || r2.Err != nil {
		t.Fatalf("reconciling: %v %v", r.Err, r2.Err)
	}
	before, _, err := c.DescribeConsumerGroup("g")
	if err != nil || before.State != ConsumerStable || len(before.Members) != 2 {
		t.Fatalf("before failover: %+v %v, want Stable with two members", before, err)
	}

	meta.Publish(imageWithTopic(2, 1, 2))
	meta.Publish(imageWithTopic(1, 2, 2))
	waitLoaded(t, c, "g")
	after, _, err := c.DescribeConsumerGroup("g")
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("after failover:\n%+v %v\nwant\n%+v", after, err, before)
	}
	for _, m := range before.Members {
		hb := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: m.MemberID, MemberEpoch: m.MemberEpoch})
		if hb.Err != nil || hb.MemberEpoch != m.MemberEpoch {
			t.Fatalf("heartbeat of %s after failover: %+v, want epoch %d kept", m.MemberID, hb, m.MemberEpoch)
		}
	}
	if err := commit(r.MemberEpoch, 9); err != nil {
		t.Fatalf("commit with the membership after failover: %v", err)
	}
	if got, err := c.FetchOffsets("g", []TopicPartition{tp}); err != nil || got[0].Offset != 7 {
		t.Fatalf("offsets after failover: %+v %v", got, err)
	}
	// A member that leaves is gone for the next coordinator too.
	if hb := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m2", MemberEpoch: leaveEpoch}); hb.Err != nil {
		t.Fatal(hb.Err)
	}
	meta.Publish(imageWithTopic(2, 3, 2))
	meta.Publish(imageWithTopic(1, 4, 2))
	waitLoaded(t, c, "g")
	if hb := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "m2", MemberEpoch: r2.MemberEpoch}); !errors.Is(hb.Err, ErrUnknownMemberID) {
		t.Fatalf("heartbeat of a member that left, after failover: %v, want UNKNOWN_MEMBER_ID", hb.Err)
	}
	d, _, _ := c.DescribeConsumerGroup("g")
	if len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.Epoch <= before.Epoch {
		t.Fatalf("after the leave and a failover: %+v", d)
	}
}

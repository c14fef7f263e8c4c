package share

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
)

// imageLedBy is a cluster whose single __consumer_offsets partition is led
// by leader at epoch, with a topic "t" of two partitions.
func imageLedBy(leader, epoch int32) *cluster.Image {
	t := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{9}, Partitions: []cluster.PartitionInfo{
		{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{Partition: 1, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
	}}
	return &cluster.Image{
		Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1}, 2: {NodeID: 2}},
		Topics: map[string]*cluster.TopicInfo{
			group.OffsetsTopic: {Name: group.OffsetsTopic, ID: cluster.TopicID{1}, Partitions: []cluster.PartitionInfo{
				{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
			}},
			"t": t,
		},
		IDs: map[cluster.TopicID]string{{1}: group.OffsetsTopic, {9}: "t"},
	}
}

// brokerPair is one broker's group coordinator and share coordinator.
type brokerPair struct {
	groups *group.Coordinator
	share  *Coordinator
}

func startPair(t *testing.T, node int32, meta *fake.Meta, lg *fake.Log, now func() time.Time) brokerPair {
	t.Helper()
	gc, err := group.New(group.DefaultConfig(), meta, lg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gc.Close)
	sc := NewCoordinator(DefaultConfig(), node, meta, zerolog.Nop(), WithStore(gc), WithCoordinatorClock(now))
	t.Cleanup(sc.Close)
	return brokerPair{gc, sc}
}

func heartbeatOK(t *testing.T, c *Coordinator, req HeartbeatRequest) HeartbeatResult {
	t.Helper()
	var r HeartbeatResult
	testkit.Eventually(t, 10*time.Second, func() error {
		r, _ = c.Heartbeat("sg", req)
		if errors.Is(r.Err, group.ErrCoordinatorLoading) {
			return r.Err
		}
		return nil
	})
	if r.Err != nil {
		t.Fatalf("heartbeat %+v: %v", req, r.Err)
	}
	return r
}

// A share group's membership is stored in __consumer_offsets: when another
// broker becomes its coordinator it loads the members with their epochs
// and assignments, so they keep heartbeating without rejoining, their
// sessions restarted; a member that left stays gone.
func TestShareGroupMembershipSurvivesCoordinatorChange(t *testing.T) {
	lg := fake.NewLog()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	meta1 := fake.NewMeta(1, imageLedBy(1, 0))
	b1 := startPair(t, 1, meta1, lg, clock)
	a := heartbeatOK(t, b1.share, HeartbeatRequest{MemberID: "a", Subscribed: []string{"t"}, ClientID: "ca"})
	b := heartbeatOK(t, b1.share, HeartbeatRequest{MemberID: "b", Subscribed: []string{"t"}, ClientID: "cb"})
	a = heartbeatOK(t, b1.share, HeartbeatRequest{MemberID: "a", MemberEpoch: a.MemberEpoch, ClientID: "ca"})
	before, err := b1.share.Describe("sg")
	if err != nil || len(before.Members) != 2 {
		t.Fatalf("before: %+v %v", before, err)
	}

	// Broker 2 takes over the group's partition of __consumer_offsets.
	meta1.Publish(imageLedBy(2, 1))
	meta2 := fake.NewMeta(2, imageLedBy(2, 1))
	b2 := startPair(t, 2, meta2, lg, clock)
	// Listed before any member heartbeats to the new coordinator.
	testkit.Eventually(t, 10*time.Second, func() error {
		if l := b2.share.List(); len(l) != 1 || l[0].GroupID != "sg" || l[0].State != "Stable" {
			return fmt.Errorf("listing after the coordinator change: %+v", l)
		}
		return nil
	})
	r := heartbeatOK(t, b2.share, HeartbeatRequest{MemberID: "a", MemberEpoch: a.MemberEpoch, ClientID: "ca"})
	if r.MemberEpoch != a.MemberEpoch {
		t.Fatalf("member a at epoch %d after the coordinator change, was %d", r.MemberEpoch, a.MemberEpoch)
	}
	r = heartbeatOK(t, b2.share, HeartbeatRequest{MemberID: "b", MemberEpoch: b.MemberEpoch, ClientID: "cb"})
	if r.MemberEpoch != before.Epoch {
		t.Fatalf("member b at epoch %d after the coordinator change, want the group's %d", r.MemberEpoch, before.Epoch)
	}
	if l := b2.share.List(); len(l) != 1 || l[0].GroupID != "sg" || l[0].State != "Stable" {
		t.Fatalf("listing after the coordinator change: %+v", l)
	}
	after, err := b2.share.Describe("sg")
	if err != nil || after.Epoch != before.Epoch || len(after.Members) != 2 {
		t.Fatalf("after: %+v %v, want %+v", after, err, before)
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.ID != w.ID || m.Epoch != w.Epoch || m.ClientID != w.ClientID || len(m.Assignment["t"]) != 2 {
			t.Fatalf("member after the change %+v, before %+v", m, w)
		}
		if m.deadline != now.UnixMilli()+DefaultConfig().SessionTimeout.Milliseconds() {
			t.Fatalf("member %s session deadline %d, want restarted at load", m.ID, m.deadline)
		}
	}

	// b leaves; back on broker 1 (a fresh load) only a remains.
	heartbeatOK(t, b2.share, HeartbeatRequest{MemberID: "b", MemberEpoch: -1})
	meta2.Publish(imageLedBy(1, 2))
	meta3 := fake.NewMeta(1, imageLedBy(1, 2))
	b3 := startPair(t, 1, meta3, lg, clock)
	if r, _ := b3.share.Heartbeat("sg", HeartbeatRequest{MemberID: "b", MemberEpoch: b.MemberEpoch}); !errors.Is(r.Err, ErrUnknownMember) {
		testkit.Eventually(t, 10*time.Second, func() error {
			r, _ = b3.share.Heartbeat("sg", HeartbeatRequest{MemberID: "b", MemberEpoch: b.MemberEpoch})
			if errors.Is(r.Err, ErrUnknownMember) {
				return nil
			}
			return r.Err
		})
	}
	d, err := b3.share.Describe("sg")
	if err != nil || len(d.Members) != 1 || d.Members[0].ID != "a" {
		t.Fatalf("after b left and another change: %+v %v", d, err)
	}
	// Deleting the empty group leaves nothing for the next coordinator.
	heartbeatOK(t, b3.share, HeartbeatRequest{MemberID: "a", MemberEpoch: -1})
	if err := b3.share.Delete("sg"); err != nil {
		t.Fatal(err)
	}
	meta3.Publish(imageLedBy(2, 3))
	b4 := startPair(t, 2, fake.NewMeta(2, imageLedBy(2, 3)), lg, clock)
	testkit.Eventually(t, 10*time.Second, func() error {
		_, err := b4.share.Describe("sg")
		if errors.Is(err, ErrGroupNotFound) {
			return nil
		}
		return err
	})
}

// A heartbeat that changes nothing writes nothing; after a write failed,
// the next heartbeat writes the group again even if it changes nothing.
func TestShareGroupHeartbeatWritesOnlyChanges(t *testing.T) {
	lg := fake.NewLog()
	b := startPair(t, 1, fake.NewMeta(1, imageLedBy(1, 0)), lg, time.Now)
	otp := group.TopicPartition{Topic: group.OffsetsTopic}
	end := func() int64 { _, leo, _, _ := lg.Bounds(otp); return leo }
	a := heartbeatOK(t, b.share, HeartbeatRequest{MemberID: "a", Subscribed: []string{"t"}, ClientID: "ca"})
	before := end()
	if before == 0 {
		t.Fatal("joining wrote nothing")
	}
	heartbeatOK(t, b.share, HeartbeatRequest{MemberID: "a", MemberEpoch: a.MemberEpoch, ClientID: "ca"})
	if end() != before {
		t.Fatalf("a heartbeat that changed nothing wrote %d records", end()-before)
	}
	lg.FailAppends(errors.New("disk on fire"))
	if r, _ := b.share.Heartbeat("sg", HeartbeatRequest{MemberID: "a", MemberEpoch: a.MemberEpoch, ClientID: "new"}); r.Err == nil {
		t.Fatal("heartbeat answered although its write failed")
	}
	lg.FailAppends(nil)
	heartbeatOK(t, b.share, HeartbeatRequest{MemberID: "a", MemberEpoch: a.MemberEpoch, ClientID: "new"})
	if end() == before {
		t.Fatal("the change whose write failed was not written again")
	}
}

// The coordinator's session expiry sleeps while it holds no share group,
// and the first group woken up: a member that stops heartbeating still
// leaves when its session ends, by the coordinator's clock.
func TestShareMemberSessionExpiresAfterExpirySleptWhileIdle(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := startPair(t, 1, fake.NewMeta(1, imageLedBy(1, 0)), fake.NewLog(), clock)
	testkit.Eventually(t, 10*time.Second, func() error {
		if !b.share.expiry.sleeping.Load() {
			return errors.New("the expiry of a coordinator holding no group still ticks")
		}
		return nil
	})
	heartbeatOK(t, b.share, HeartbeatRequest{MemberID: "a", Subscribed: []string{"t"}, ClientID: "ca"})
	mu.Lock()
	now = now.Add(DefaultConfig().SessionTimeout + time.Second)
	mu.Unlock()
	testkit.Eventually(t, 10*time.Second, func() error {
		d, err := b.share.Describe("sg")
		if err != nil {
			return err
		}
		if len(d.Members) != 0 {
			return fmt.Errorf("members %+v after a's session ended", d.Members)
		}
		return nil
	})
}

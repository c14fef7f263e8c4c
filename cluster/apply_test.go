package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if d, ok := t.Deadline(); ok && time.Until(d) < time.Second {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A fence and the leadership move it implies are one entry: when the move
// cannot apply (computed from a partition epoch that is no longer
// current), the fence must not apply either, so that the broker stays
// unfenced and the controller's next session check fences it again with a
// fresh move. Applied half, it would leave a fenced broker leading.
func TestEntryWithAFailingCommandAppliesNothing(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 1}}})
	before := c.Image()
	cur := *before.Partition("t", 0)
	next := cur
	next.Leader, next.ISR = 1, []int32{1}
	next.LeaderEpoch++
	next.PartitionEpoch++
	err := c.log.Propose(context.Background(),
		&Command{Type: CmdFenceBroker, BrokerID: 2},
		&Command{Type: CmdSetTopicConfigs, Name: "t", Configs: map[string]string{"retention.ms": "1"}},
		&Command{Type: CmdChangePartitions, Changes: []PartitionChange{{Topic: "t", ExpectPartitionEpoch: cur.PartitionEpoch + 3, Next: next}}},
	)
	if !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("got %v, want the stale change's ErrInvalidUpdateVersion", err)
	}
	after := c.Image()
	if after.Brokers[2].Fenced {
		t.Fatal("the fence of a failed entry was applied: broker 2 is fenced while it still leads t-0")
	}
	if after.Topic("t").Configs["retention.ms"] == "1" {
		t.Fatal("the config change of a failed entry was applied")
	}
	if p := after.Partition("t", 0); p.Leader != 2 || p.PartitionEpoch != cur.PartitionEpoch {
		t.Fatalf("t-0 after the failed entry: %+v", p)
	}
	if after.Offset <= before.Offset {
		t.Fatalf("offset %d: a failed entry still advances the applied offset past %d", after.Offset, before.Offset)
	}
	// The same entry computed from the current record applies as a whole.
	err = c.log.Propose(context.Background(),
		&Command{Type: CmdFenceBroker, BrokerID: 2},
		&Command{Type: CmdChangePartitions, Changes: []PartitionChange{{Topic: "t", ExpectPartitionEpoch: cur.PartitionEpoch, Next: next}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if im := c.Image(); !im.Brokers[2].Fenced || im.Partition("t", 0).Leader != 1 {
		t.Fatalf("entry not applied: broker 2 %+v, t-0 %+v", im.Brokers[2], im.Partition("t", 0))
	}
}

func TestStateApplyEntryIsAllOrNothing(t *testing.T) {
	s := NewState()
	mustApply(t, s, registerCmd(1), &Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 1, nil)})
	want := cloneImage(s.Image(1))
	err := s.ApplyEntry(s.offset+1, []*Command{
		{Type: CmdFenceBroker, BrokerID: 1},
		{Type: CmdDeleteTopic, Name: "a"},
		{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "5"}},
		{Type: CmdClientQuotas, Quotas: []QuotaChange{{Entity: QuotaEntity{{Type: "client-id"}}, Set: map[string]float64{"producer_byte_rate": 1024}}}},
		{Type: CmdFenceBroker, BrokerID: 9}, // unknown: fails
	})
	if err == nil {
		t.Fatal("entry with an invalid command applied")
	}
	if got := s.Image(1); !imagesEqual(got, want) {
		t.Fatalf("state changed by a failed entry: brokers %v topics %v configs %v quotas %v", got.Brokers, got.TopicNames(), got.BrokerConfigs, got.ClientQuotas)
	}
}

func imagesEqual(a, b *Image) bool {
	return a.Offset == b.Offset && reflect.DeepEqual(a.Brokers, b.Brokers) && reflect.DeepEqual(a.Topics, b.Topics) &&
		reflect.DeepEqual(a.IDs, b.IDs) && reflect.DeepEqual(a.BrokerConfigs, b.BrokerConfigs) &&
		reflect.DeepEqual(a.ClientQuotas, b.ClientQuotas)
}

// A newly elected controller may hold committed entries it has not applied
// yet. Here the fsm is held inside an earlier entry while a fence of
// broker 2 waits behind it, and the controller is made to believe it has
// just been elected. An AlterPartition adding broker 2 to the ISR must be
// validated against the state after the fence (INELIGIBLE_REPLICA), not
// against the image the controller happened to have.
func TestNewControllerAppliesCommittedLogBeforeValidating(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	ctx := context.Background()
	shrunk, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, Topic: "t", Partition: 0, NewISR: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}

	var blocking atomic.Bool
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hold := func() {
		if blocking.Load() {
			once.Do(func() {
				close(held)
				<-release
			})
		}
	}
	c.log.(*raftLog).fsm.beforeApply.Store(&hold)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	base := c.log.(*raftLog).r.LastIndex()
	blocking.Store(true)
	marker, _ := json.Marshal([]*Command{{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "7"}}})
	fence, _ := json.Marshal([]*Command{{Type: CmdFenceBroker, BrokerID: 2}})
	markerF := c.log.(*raftLog).r.Apply(marker, 5*time.Second)
	<-held
	fenceF := c.log.(*raftLog).r.Apply(fence, 5*time.Second)
	waitFor(t, "the fence to be committed", func() bool { return c.log.(*raftLog).r.LastIndex() >= base+2 })
	if c.Image().Brokers[2].Fenced {
		t.Fatal("setup: the fence was applied already")
	}

	// What a controller looks like right after its election.
	c.proposeMu.Lock()
	c.caughtUpTerm = 0
	c.proposeMu.Unlock()

	type result struct {
		info PartitionInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := c.AlterPartition(ctx, AlterPartitionRequest{
			BrokerID: 1, Topic: "t", Partition: 0, LeaderEpoch: shrunk.LeaderEpoch, PartitionEpoch: shrunk.PartitionEpoch, NewISR: []int32{1, 2},
		})
		done <- result{info, err}
	}()
	// The AlterPartition has appended something: its barrier, or (without
	// one) the change it validated against the older image.
	waitFor(t, "the AlterPartition to reach the log", func() bool { return c.log.(*raftLog).r.LastIndex() >= base+3 })
	close(release)
	released = true
	if err := markerF.Error(); err != nil {
		t.Fatal(err)
	}
	if err := fenceF.Error(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if !errors.Is(res.err, ErrIneligibleReplica) {
		t.Fatalf("AlterPartition adding fenced broker 2: got %v (ISR %v), want ErrIneligibleReplica", res.err, res.info.ISR)
	}
	im := c.Image()
	if p := im.Partition("t", 0); !slices.Equal(p.ISR, []int32{1}) || !im.Brokers[2].Fenced {
		t.Fatalf("t-0 ISR %v with broker 2 fenced=%v; want ISR [1]", p.ISR, im.Brokers[2].Fenced)
	}
}

// KIP-903: a broker's epoch is the offset of the entry that registered
// its incarnation, so every restart gives it a new one.
func TestRegistrationGivesEachIncarnationANewBrokerEpoch(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "h", Port: 1, Incarnation: "aa"}); err != nil {
		t.Fatal(err)
	}
	first := c.Image().Brokers[2]
	if first.Epoch <= 0 || first.Epoch != c.Image().Offset {
		t.Fatalf("broker epoch %d, want the registration's offset %d", first.Epoch, c.Image().Offset)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().Brokers[2].Epoch; got != first.Epoch {
		t.Fatalf("a heartbeat changed the broker epoch from %d to %d", first.Epoch, got)
	}
	sessionExpired(c, 2)
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "h", Port: 1, Incarnation: "bb"}); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().Brokers[2].Epoch; got <= first.Epoch {
		t.Fatalf("restarted broker's epoch %d, want above %d", got, first.Epoch)
	}
}

// KIP-903: the leader names, with each replica it adds to the ISR, the
// broker epoch it saw in that replica's fetches. If the broker restarted
// since (it may have lost what it had not flushed, so the offsets the
// leader saw are gone), the controller refuses: INELIGIBLE_REPLICA, as
// Kafka's controller answers.
func TestAlterPartitionRefusesReplicaWithStaleBrokerEpoch(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "h", Port: 1, Incarnation: "aa"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	old := c.Image().Brokers[2].Epoch
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2}}})
	shrunk, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, Topic: "t", Partition: 0, NewISR: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	// Broker 2 restarts: a new incarnation, registered and unfenced again.
	sessionExpired(c, 2)
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "h", Port: 1, Incarnation: "bb"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	cur := *im.Partition("t", 0)
	self := im.Brokers[1].Epoch
	req := AlterPartitionRequest{BrokerID: 1, Topic: "t", Partition: 0, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch,
		NewISR: []int32{1, 2}, NewISREpochs: []int64{self, old}}
	if _, err := c.AlterPartition(ctx, req); !errors.Is(err, ErrIneligibleReplica) {
		t.Fatalf("expansion naming broker 2's previous epoch %d: got %v, want ErrIneligibleReplica", old, err)
	}
	if p := c.Image().Partition("t", 0); !slices.Equal(p.ISR, shrunk.ISR) {
		t.Fatalf("ISR %v after a refused expansion", p.ISR)
	}
	req.NewISREpochs = []int64{self, im.Brokers[2].Epoch}
	got, err := c.AlterPartition(ctx, req)
	if err != nil || !slices.Equal(got.ISR, []int32{1, 2}) {
		t.Fatalf("expansion with the current epoch: ISR %v, %v", got.ISR, err)
	}
}

// sessionExpired makes the controller treat broker id's session as
// expired, as it is when a crashed broker comes back after
// broker.session.timeout.ms: only then may a new run register
// (DUPLICATE_BROKER_REGISTRATION before).
func sessionExpired(c *Controller, id int32) {
	c.proposeMu.Lock()
	delete(c.sessions.lastSeen, id)
	c.proposeMu.Unlock()
}

package cluster

import (
	"errors"
	"maps"
	"reflect"
	"testing"
)

func tid(b byte) TopicID { return TopicID{0: b, 15: b} }

func testTopic(name string, id TopicID, partitions int, configs map[string]string) *TopicInfo {
	t := &TopicInfo{Name: name, ID: id, Configs: configs}
	for p := 0; p < partitions; p++ {
		t.Partitions = append(t.Partitions, PartitionInfo{Partition: int32(p), Leader: 1, Replicas: []int32{1}, ISR: []int32{1}})
	}
	return t
}

// mustApply applies cmds at consecutive offsets after the state's current
// one.
func mustApply(t *testing.T, s *State, cmds ...*Command) {
	t.Helper()
	for _, c := range cmds {
		if err := s.Apply(s.offset+1, c); err != nil {
			t.Fatalf("apply %s: %v", c.Type, err)
		}
	}
}

func registerCmd(id int32) *Command {
	return &Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: id, Host: "127.0.0.1", Port: 9090 + id}}
}

// cloneImage deep-copies an image so that a later comparison detects any
// mutation of what the original points to.
func cloneImage(im *Image) *Image {
	cp := *im
	cp.Brokers = maps.Clone(im.Brokers)
	cp.IDs = maps.Clone(im.IDs)
	cp.Topics = make(map[string]*TopicInfo, len(im.Topics))
	for n, t := range im.Topics {
		tc := *t
		tc.Configs = maps.Clone(t.Configs)
		tc.Partitions = nil
		for _, p := range t.Partitions {
			pc := p
			pc.Replicas = append([]int32(nil), p.Replicas...)
			pc.ISR = append([]int32(nil), p.ISR...)
			tc.Partitions = append(tc.Partitions, pc)
		}
		cp.Topics[n] = &tc
	}
	cp.BrokerConfigs = make(map[string]map[string]string, len(im.BrokerConfigs))
	for k, v := range im.BrokerConfigs {
		cp.BrokerConfigs[k] = maps.Clone(v)
	}
	return &cp
}

func TestStateApplyInitClusterSetsIDOnce(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdInitCluster, ClusterID: "first"})
	mustApply(t, s, &Command{Type: CmdInitCluster, ClusterID: "second"})
	if im := s.Image(1); im.ClusterID != "first" || im.Offset != 2 {
		t.Fatalf("cluster id %q offset %d, want the first id at offset 2", im.ClusterID, im.Offset)
	}
}

func TestStateApplyRegisterBroker(t *testing.T) {
	s := NewState()
	mustApply(t, s, registerCmd(2), registerCmd(1))
	im := s.Image(1)
	if got := im.BrokerIDs(); !reflect.DeepEqual(got, []int32{1, 2}) {
		t.Fatalf("brokers %v", got)
	}
	if im.Offset != 2 || im.ControllerID != 1 {
		t.Fatalf("offset %d controller %d", im.Offset, im.ControllerID)
	}
	// Re-registering replaces the broker's record.
	mustApply(t, s, &Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: 1, Host: "h", Port: 1, Incarnation: "x", Fenced: true}})
	if b := s.Image(1).Brokers[1]; b.Host != "h" || b.Port != 1 || b.Incarnation != "x" || !b.Fenced {
		t.Fatalf("broker 1 after re-register: %+v", b)
	}
	if err := s.Apply(10, &Command{Type: CmdRegisterBroker}); err == nil {
		t.Fatal("register_broker without a broker applied")
	}
}

func TestStateApplyFenceAndUnfenceBroker(t *testing.T) {
	s := NewState()
	mustApply(t, s, registerCmd(1))
	mustApply(t, s, &Command{Type: CmdFenceBroker, BrokerID: 1})
	if b := s.Image(1).Brokers[1]; !b.Fenced || b.Host != "127.0.0.1" {
		t.Fatalf("after fence: %+v", b)
	}
	mustApply(t, s, &Command{Type: CmdUnfenceBroker, BrokerID: 1})
	if s.Image(1).Brokers[1].Fenced {
		t.Fatal("still fenced after unfence")
	}
	off := s.offset
	for _, typ := range []CommandType{CmdFenceBroker, CmdUnfenceBroker} {
		if err := s.Apply(off+1, &Command{Type: typ, BrokerID: 7}); err == nil {
			t.Fatalf("%s of an unknown broker applied", typ)
		}
	}
	if _, ok := s.Image(1).Brokers[7]; ok || s.offset != off {
		t.Fatal("rejected fence changed the state")
	}
}

func TestStateApplyChangePartitionsChecksPartitionEpoch(t *testing.T) {
	s := NewState()
	mustApply(t, s,
		&Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 2, nil)},
		&Command{Type: CmdCreateTopic, Topic: testTopic("b", tid(2), 1, nil)},
	)
	next := func(topic string, p, leader, epoch int32, isr ...int32) PartitionChange {
		return PartitionChange{Topic: topic, ExpectPartitionEpoch: epoch - 1, Next: PartitionInfo{
			Partition: p, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{1, 2}, ISR: isr,
		}}
	}
	mustApply(t, s, &Command{Type: CmdChangePartitions, Changes: []PartitionChange{next("a", 1, 2, 1, 2), next("b", 0, 1, 1, 1, 2)}})
	im := s.Image(1)
	if p := im.Partition("a", 1); p.Leader != 2 || p.PartitionEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{2}) {
		t.Fatalf("a-1 after change: %+v", p)
	}
	if p := im.Partition("a", 0); p.PartitionEpoch != 0 || p.Leader != 1 {
		t.Fatalf("a-0 changed: %+v", p)
	}
	if p := im.Partition("b", 0); p.PartitionEpoch != 1 || len(p.ISR) != 2 {
		t.Fatalf("b-0 after change: %+v", p)
	}
	// A stale change fails the whole command, even the part that is current.
	off := s.offset
	stale := &Command{Type: CmdChangePartitions, Changes: []PartitionChange{next("a", 0, 2, 1, 2), next("a", 1, 1, 1, 1)}}
	if err := s.Apply(off+1, stale); !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale change: got %v, want ErrInvalidUpdateVersion", err)
	}
	for _, bad := range []PartitionChange{next("zz", 0, 1, 1, 1), next("a", 2, 1, 1, 1), next("a", -1, 1, 1, 1)} {
		if err := s.Apply(off+1, &Command{Type: CmdChangePartitions, Changes: []PartitionChange{bad}}); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("change of %s-%d: got %v, want ErrUnknownTopic", bad.Topic, bad.Next.Partition, err)
		}
	}
	if !reflect.DeepEqual(s.Image(1).Topics, im.Topics) || s.offset != off {
		t.Fatal("rejected changes altered the state")
	}
}

func TestStateApplyCreateTopic(t *testing.T) {
	s := NewState()
	cfgs := map[string]string{"retention.ms": "1"}
	top := testTopic("a", tid(1), 2, cfgs)
	mustApply(t, s, &Command{Type: CmdCreateTopic, Topic: top})
	// The state keeps its own copy of what the command carried.
	cfgs["retention.ms"] = "2"
	top.Partitions[0].Leader = 9
	im := s.Image(1)
	got := im.Topic("a")
	if got == nil || got.ID != tid(1) || len(got.Partitions) != 2 {
		t.Fatalf("topic a: %+v", got)
	}
	if got.Configs["retention.ms"] != "1" || got.Partitions[0].Leader != 1 {
		t.Fatalf("state shares the command's topic: configs %v leader %d", got.Configs, got.Partitions[0].Leader)
	}
	if im.TopicByID(tid(1)) != got {
		t.Fatal("TopicByID does not find the topic")
	}
	if im.Partition("a", 1) == nil || im.Partition("a", 2) != nil || im.Partition("a", -1) != nil || im.Partition("b", 0) != nil {
		t.Fatal("Partition lookup bounds wrong")
	}

	off := s.offset
	err := s.Apply(off+1, &Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(2), 1, nil)})
	if !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create of a: %v, want ErrTopicExists", err)
	}
	if err := s.Apply(off+1, &Command{Type: CmdCreateTopic, Topic: testTopic("b", tid(1), 1, nil)}); err == nil {
		t.Fatal("topic id collision applied")
	}
	if err := s.Apply(off+1, &Command{Type: CmdCreateTopic}); err == nil {
		t.Fatal("create_topic without topic applied")
	}
	if s.offset != off || s.Image(1).Topic("b") != nil {
		t.Fatalf("failed commands changed the state: offset %d, want %d", s.offset, off)
	}
}

func TestStateApplyDeleteTopic(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 1, nil)})
	mustApply(t, s, &Command{Type: CmdDeleteTopic, Name: "a"})
	im := s.Image(1)
	if im.Topic("a") != nil || im.TopicByID(tid(1)) != nil || len(im.IDs) != 0 {
		t.Fatalf("topic a still present: %v %v", im.Topics, im.IDs)
	}
	if err := s.Apply(s.offset+1, &Command{Type: CmdDeleteTopic, Name: "a"}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("delete unknown: %v, want ErrUnknownTopic", err)
	}
	// The id is free again.
	mustApply(t, s, &Command{Type: CmdCreateTopic, Topic: testTopic("b", tid(1), 1, nil)})
}

func TestStateApplyCreatePartitionsAppendsInSequence(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 2, nil)})
	add := []PartitionInfo{
		{Partition: 2, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{Partition: 3, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
	}
	mustApply(t, s, &Command{Type: CmdCreatePartitions, Name: "a", Partitions: add})
	if n := len(s.Image(1).Topic("a").Partitions); n != 4 {
		t.Fatalf("%d partitions, want 4", n)
	}
	off := s.offset
	gap := []PartitionInfo{{Partition: 5, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}
	if err := s.Apply(off+1, &Command{Type: CmdCreatePartitions, Name: "a", Partitions: gap}); err == nil {
		t.Fatal("out-of-sequence partition applied")
	}
	if n := len(s.Image(1).Topic("a").Partitions); n != 4 || s.offset != off {
		t.Fatalf("failed create_partitions changed the state: %d partitions, offset %d", n, s.offset)
	}
	if err := s.Apply(off+1, &Command{Type: CmdCreatePartitions, Name: "zz", Partitions: add}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("create_partitions on unknown topic: %v", err)
	}
}

func TestStateApplySetTopicConfigsReplacesOverrides(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 1, map[string]string{"retention.ms": "1", "segment.ms": "5"})})
	cfgs := map[string]string{"retention.ms": "2"}
	mustApply(t, s, &Command{Type: CmdSetTopicConfigs, Name: "a", Configs: cfgs})
	cfgs["retention.ms"] = "3"
	got := s.Image(1).Topic("a").Configs
	if !reflect.DeepEqual(got, map[string]string{"retention.ms": "2"}) {
		t.Fatalf("configs %v, want only retention.ms=2", got)
	}
	if err := s.Apply(s.offset+1, &Command{Type: CmdSetTopicConfigs, Name: "zz", Configs: cfgs}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("set configs on unknown topic: %v", err)
	}
}

func TestStateApplySetBrokerConfigsEmptyRemovesResource(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "1"}})
	mustApply(t, s, &Command{Type: CmdSetBrokerConfigs, Name: "1", Configs: map[string]string{"log.retention.ms": "2"}})
	im := s.Image(1)
	if im.BrokerConfigs[""]["log.retention.ms"] != "1" || im.BrokerConfigs["1"]["log.retention.ms"] != "2" {
		t.Fatalf("broker configs %v", im.BrokerConfigs)
	}
	mustApply(t, s, &Command{Type: CmdSetBrokerConfigs, Name: "1"})
	if _, ok := s.Image(1).BrokerConfigs["1"]; ok {
		t.Fatal("empty set_broker_configs left the resource")
	}
}

func TestStateApplyUnknownCommandIsRejected(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, &Command{Type: "bogus"}); err == nil {
		t.Fatal("unknown command applied")
	}
	if s.offset != 0 {
		t.Fatalf("offset %d after a rejected command", s.offset)
	}
}

func populatedState(t *testing.T) *State {
	s := NewState()
	mustApply(t, s,
		&Command{Type: CmdInitCluster, ClusterID: "cid"},
		registerCmd(1),
		registerCmd(2),
		&Command{Type: CmdCreateTopic, Topic: testTopic("a", tid(1), 3, map[string]string{"retention.ms": "1000"})},
		&Command{Type: CmdCreateTopic, Topic: testTopic("b.c", tid(2), 1, nil)},
		&Command{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "5"}},
		&Command{Type: CmdSetBrokerConfigs, Name: "2", Configs: map[string]string{"message.max.bytes": "7"}},
	)
	return s
}

func TestStateSnapshotRoundTrip(t *testing.T) {
	s := populatedState(t)
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewState()
	mustApply(t, r, &Command{Type: CmdCreateTopic, Topic: testTopic("stale", tid(9), 1, nil)})
	if err := r.RestoreSnapshot(b); err != nil {
		t.Fatal(err)
	}
	want, got := s.Image(1), r.Image(1)
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("restored image differs:\nwant %+v\ngot  %+v", want, got)
	}
	// Marshalling is deterministic, so the restored state serialises the same.
	b2, err := r.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(b2) {
		t.Fatalf("snapshot not stable:\n%s\n%s", b, b2)
	}
	// The restored state keeps applying from the restored offset.
	mustApply(t, r, &Command{Type: CmdDeleteTopic, Name: "a"})
	if r.Image(1).Offset != s.offset+1 {
		t.Fatalf("offset %d after restore+apply, want %d", r.Image(1).Offset, s.offset+1)
	}
}

func TestStateRestoreSnapshotRejectsGarbageAndKeepsState(t *testing.T) {
	s := populatedState(t)
	before := cloneImage(s.Image(1))
	if err := s.RestoreSnapshot([]byte("{not json")); err == nil {
		t.Fatal("garbage snapshot restored")
	}
	if !reflect.DeepEqual(before, s.Image(1)) {
		t.Fatal("failed restore changed the state")
	}
}

func TestImageUnchangedByLaterCommands(t *testing.T) {
	s := populatedState(t)
	old := s.Image(1)
	want := cloneImage(old)
	mustApply(t, s,
		registerCmd(3),
		&Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: 1, Host: "moved", Port: 1}},
		&Command{Type: CmdFenceBroker, BrokerID: 2},
		&Command{Type: CmdChangePartitions, Changes: []PartitionChange{{Topic: "a", ExpectPartitionEpoch: 0, Next: PartitionInfo{
			Partition: 0, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1},
		}}}},
		&Command{Type: CmdCreatePartitions, Name: "a", Partitions: []PartitionInfo{{Partition: 3, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}}}},
		&Command{Type: CmdSetTopicConfigs, Name: "a", Configs: map[string]string{"segment.ms": "9"}},
		&Command{Type: CmdSetBrokerConfigs, Name: "", Configs: map[string]string{"log.retention.ms": "6", "log.roll.ms": "1"}},
		&Command{Type: CmdSetBrokerConfigs, Name: "2"},
		&Command{Type: CmdDeleteTopic, Name: "b.c"},
		&Command{Type: CmdCreateTopic, Topic: testTopic("d", tid(4), 1, nil)},
	)
	if !reflect.DeepEqual(want, old) {
		t.Fatalf("old image changed:\nwant %+v\ngot  %+v", want, old)
	}
	// And the same through a snapshot restore.
	b, _ := s.MarshalSnapshot()
	old = s.Image(1)
	want = cloneImage(old)
	if err := s.RestoreSnapshot(b); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Command{Type: CmdSetTopicConfigs, Name: "d", Configs: map[string]string{"retention.ms": "1"}})
	if !reflect.DeepEqual(want, old) {
		t.Fatal("image taken before a restore changed")
	}
}

package coordinator

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
)

// creatingMeta creates the topics asked for, one partition each, led by
// broker 2, and records the specs.
type creatingMeta struct {
	im    *cluster.Image
	specs []cluster.TopicSpec
}

func (m *creatingMeta) Image() *cluster.Image                 { return m.im }
func (m *creatingMeta) Watch(func(prev, next *cluster.Image)) {}
func (m *creatingMeta) NodeID() int32                         { return 1 }
func (m *creatingMeta) CreateTopics(_ context.Context, specs []cluster.TopicSpec, _ bool) []error {
	m.specs = append(m.specs, specs...)
	next := *m.im
	next.Topics = map[string]*cluster.TopicInfo{}
	for _, s := range specs {
		next.Topics[s.Name] = &cluster.TopicInfo{Name: s.Name, Partitions: []cluster.PartitionInfo{{Partition: 0, Leader: 2}}}
	}
	m.im = &next
	return make([]error, len(specs))
}

// An internal topic is created on first use with no more replicas than
// live brokers, min.insync.replicas capped to match, and its configs; the
// key's coordinator is its partition's leader.
func TestCoordinatorForCreatesTheTopic(t *testing.T) {
	meta := &creatingMeta{im: &cluster.Image{Brokers: map[int32]cluster.BrokerInfo{
		1: {NodeID: 1}, 2: {NodeID: 2}, 3: {NodeID: 3, Fenced: true},
	}}}
	topic := InternalTopic{Name: "__state", NumPartitions: 1, ReplicationFactor: 3, MinISR: 3, Configs: map[string]string{"cleanup.policy": "compact"}}
	b, err := CoordinatorFor(context.Background(), meta, topic, "key", zerolog.Nop())
	if err != nil || b.NodeID != 2 {
		t.Fatalf("coordinator %+v, %v; want broker 2", b, err)
	}
	if len(meta.specs) != 1 {
		t.Fatalf("%d topics created, want 1", len(meta.specs))
	}
	s := meta.specs[0]
	if s.ReplicationFactor != 2 || *s.Configs["min.insync.replicas"] != "2" || *s.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("created %+v (min.insync.replicas %s)", s, *s.Configs["min.insync.replicas"])
	}
	// Asked again, the topic exists and is not created twice.
	if _, err := CoordinatorFor(context.Background(), meta, topic, "key", zerolog.Nop()); err != nil || len(meta.specs) != 1 {
		t.Fatalf("second lookup: %v, %d creations", err, len(meta.specs))
	}
}

// With no live broker, or no live leader for the key's partition, the
// answer is COORDINATOR_NOT_AVAILABLE, which clients retry.
func TestCoordinatorForUnavailable(t *testing.T) {
	none := &creatingMeta{im: &cluster.Image{Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1, Fenced: true}}}}
	if _, err := CoordinatorFor(context.Background(), none, InternalTopic{Name: "__state", NumPartitions: 1, ReplicationFactor: 3}, "k", zerolog.Nop()); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("no live broker: %v", err)
	}
	leaderless := &creatingMeta{im: &cluster.Image{
		Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1}},
		Topics:  map[string]*cluster.TopicInfo{"__state": {Name: "__state", Partitions: []cluster.PartitionInfo{{Partition: 0, Leader: -1}}}},
	}}
	if _, err := CoordinatorFor(context.Background(), leaderless, InternalTopic{Name: "__state"}, "k", zerolog.Nop()); !errors.Is(err, ErrCoordinatorNotAvailable) {
		t.Fatalf("no leader: %v", err)
	}
}

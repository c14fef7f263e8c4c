package coordinator

import (
	"context"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// TopicPartition names a partition of an internal topic.
type TopicPartition = partition.TopicPartition

// Replicas is what a coordinator needs of the replica manager: appending
// to a partition of its internal topic that this broker leads, and
// reading one back.
type Replicas interface {
	// Append writes one record batch to tp as its leader and returns once
	// the whole ISR has it (acks=all), or with an error.
	Append(ctx context.Context, tp TopicPartition, batch []byte, timeout time.Duration) error
	// Bounds returns the log start offset, high watermark and log end
	// offset of a partition hosted here.
	Bounds(tp TopicPartition) (logStart, hw, leo int64, err error)
	// Read returns whole record batches of tp from offset, below maxOffset,
	// about maxBytes of them (at least one batch when any is there).
	Read(tp TopicPartition, offset, maxOffset int64, maxBytes int32) ([]byte, error)
}

// Metadata is what a coordinator needs of the cluster metadata;
// cluster.Metadata provides it.
type Metadata interface {
	Image() *cluster.Image
	// Watch runs fn after applied changes, in log order, on the metadata
	// watcher goroutine (cluster.Metadata.Watch).
	Watch(fn func(prev, next *cluster.Image))
	CreateTopics(ctx context.Context, specs []cluster.TopicSpec, validateOnly bool) []error
	NodeID() int32
}

// ReplicaStore adapts a replication.Manager to Replicas.
func ReplicaStore(m *replication.Manager) Replicas { return replicaStore{m} }

type replicaStore struct{ m *replication.Manager }

func (s replicaStore) Append(ctx context.Context, tp TopicPartition, batch []byte, timeout time.Duration) error {
	_, err := s.m.ProduceWithOptions(ctx, tp, batch, -1, timeout, replication.AppendOptions{FromCoordinator: true})
	return err
}

func (s replicaStore) Bounds(tp TopicPartition) (int64, int64, int64, error) {
	p := s.m.Get(tp)
	if p == nil {
		return 0, 0, 0, replication.ErrNotLeaderOrFollower
	}
	lg := p.Log()
	return lg.LogStartOffset(), lg.HighWatermark(), lg.LogEndOffset(), nil
}

// HWMoved returns a channel closed when tp's high watermark next moves
// (hwNotifier), nil if tp is not hosted here.
func (s replicaStore) HWMoved(tp TopicPartition) <-chan struct{} { return s.m.HWMoved(tp) }

func (s replicaStore) Read(tp TopicPartition, offset, maxOffset int64, maxBytes int32) ([]byte, error) {
	p := s.m.Get(tp)
	if p == nil {
		return nil, replication.ErrNotLeaderOrFollower
	}
	info, err := p.Log().Read(offset, maxBytes, maxOffset, true)
	return info.Records, err
}

package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Replicas is what the coordinator needs of the replica manager: appending
// to a __consumer_offsets partition it leads, and reading one back.
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

// Metadata is what the coordinator needs of the cluster metadata;
// cluster.Metadata provides it.
type Metadata interface {
	Image() *cluster.Image
	// Watch runs fn after every applied change, on the applying goroutine.
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

func (s replicaStore) Read(tp TopicPartition, offset, maxOffset int64, maxBytes int32) ([]byte, error) {
	p := s.m.Get(tp)
	if p == nil {
		return nil, replication.ErrNotLeaderOrFollower
	}
	info, err := p.Log().Read(offset, maxBytes, maxOffset, true)
	return info.Records, err
}

// convertAppendError maps a failed append to what Kafka answers for it
// (GroupMetadataManager: storeGroup and maybeConvertOffsetCommitError).
// forCommit selects OffsetCommit's mapping, which differs for oversized
// batches and timeouts.
func convertAppendError(err error, forCommit bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idempotent.ErrInvalidProducerEpoch), errors.Is(err, idempotent.ErrInvalidTxnState):
		// A transactional commit from a fenced producer (TxnOffsetCommit).
		return err
	case errors.Is(err, replication.ErrUnknownTopicOrPartition),
		errors.Is(err, replication.ErrNotEnoughReplicas),
		errors.Is(err, replication.ErrNotEnoughReplicasAfterAppend):
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	case errors.Is(err, replication.ErrRequestTimedOut), errors.Is(err, context.DeadlineExceeded):
		if forCommit {
			return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
		}
		return fmt.Errorf("%w: %v", ErrRebalanceInProgress, err)
	case errors.Is(err, replication.ErrNotLeaderOrFollower), errors.Is(err, replication.ErrStorage),
		errors.Is(err, partition.ErrLogClosed), errors.Is(err, ErrNotCoordinator):
		return fmt.Errorf("%w: %v", ErrNotCoordinator, err)
	case errors.Is(err, partition.ErrMessageTooLarge), errors.Is(err, partition.ErrRecordListTooLarge):
		if forCommit {
			return fmt.Errorf("%w: %v", ErrInvalidCommitOffsetSize, err)
		}
		return fmt.Errorf("%w: %v", ErrUnknownServer, err)
	case errors.Is(err, ErrCoordinatorNotAvailable), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	}
	return fmt.Errorf("%w: %v", ErrUnknownServer, err)
}

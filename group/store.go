package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Replicas is what the coordinator needs of the replica manager.
type Replicas = coordinator.Replicas

// Metadata is what the coordinator needs of the cluster metadata;
// cluster.Metadata provides it.
type Metadata = coordinator.Metadata

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

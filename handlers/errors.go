package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/txn"
)

var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{replication.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{replication.ErrNotLeaderOrFollower, kerr.NotLeaderForPartition},
	{replication.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replication.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{replication.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replication.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{replication.ErrRequestTimedOut, kerr.RequestTimedOut},
	{replication.ErrStorage, kerr.KafkaStorageError},
	{partition.ErrStorage, kerr.KafkaStorageError},
	{idempotent.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{idempotent.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{idempotent.ErrInvalidTxnState, kerr.InvalidTxnState},
	{idempotent.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{partition.ErrCorruptMessage, kerr.CorruptMessage},
	{partition.ErrInvalidRecord, kerr.InvalidRecord},
	{partition.ErrMessageTooLarge, kerr.MessageTooLarge},
	{partition.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{partition.ErrUnsupportedMagic, kerr.UnsupportedForMessageFormat},
	{partition.ErrUnsupportedCompression, kerr.UnsupportedCompressionType},
	{partition.ErrRecordListTooLarge, kerr.RecordListTooLarge},
	{partition.ErrLogClosed, kerr.NotLeaderForPartition},
	{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
	{cluster.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{cluster.ErrInvalidTopic, kerr.InvalidTopicException},
	{cluster.ErrInvalidPartitions, kerr.InvalidPartitions},
	{cluster.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{cluster.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{cluster.ErrInvalidConfig, kerr.InvalidConfig},
	{cluster.ErrInvalidRequest, kerr.InvalidRequest},
	{cluster.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled},
	{cluster.ErrNotController, kerr.NotController},
	{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{group.ErrNotCoordinator, kerr.NotCoordinator},
	{group.ErrCoordinatorLoading, kerr.CoordinatorLoadInProgress},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrUnknownMemberID, kerr.UnknownMemberID},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID},
	{group.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
	{group.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{group.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{group.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrInvalidCommitOffsetSize, kerr.InvalidCommitOffsetSize},
	{group.ErrUnknownServer, kerr.UnknownServerError},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{group.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{txn.ErrNotCoordinator, kerr.NotCoordinator},
	{txn.ErrCoordinatorLoading, kerr.CoordinatorLoadInProgress},
	{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
	{txn.ErrProducerFenced, kerr.ProducerFenced},
	{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	{txn.ErrInvalidTxnTimeout, kerr.InvalidTransactionTimeout},
	{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
	{txn.ErrInvalidRequest, kerr.InvalidRequest},
	{txn.ErrUnknownServer, kerr.UnknownServerError},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// errorCode maps an error to its Kafka code; 0 for nil, and
// UNKNOWN_SERVER_ERROR for anything unexpected.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage returns the message for responses that carry one, nil
// without an error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

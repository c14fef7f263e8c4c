package share

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Sentinels returned by the share coordinator and the share-partition
// manager; each wraps the Kafka error it answers as.
var (
	ErrNotCoordinator         = kafkaerr.New(kerr.NotCoordinator, "not the coordinator of this share group")
	ErrCoordinatorUnavailable = kafkaerr.New(kerr.CoordinatorNotAvailable, "share coordinator not available")
	ErrUnknownMember          = kafkaerr.New(kerr.UnknownMemberID, "unknown member id")
	ErrFencedMemberEpoch      = kafkaerr.New(kerr.FencedMemberEpoch, "fenced member epoch")
	ErrGroupNotFound          = kafkaerr.New(kerr.GroupIDNotFound, "group id not found")
	ErrNonEmptyGroup          = kafkaerr.New(kerr.NonEmptyGroup, "the group has members")
	ErrInvalidRequest         = kafkaerr.New(kerr.InvalidRequest, "invalid request")
	ErrInvalidRecordState     = kafkaerr.New(kerr.InvalidRecordState, "record state does not allow this acknowledgement")
	ErrSessionNotFound        = kafkaerr.New(kerr.ShareSessionNotFound, "share session not found")
	ErrInvalidSessionEpoch    = kafkaerr.New(kerr.InvalidShareSessionEpoch, "invalid share session epoch")
	ErrNotLeader              = kafkaerr.New(kerr.NotLeaderForPartition, "not the leader of this partition")
	ErrUnknownTopic           = kafkaerr.New(kerr.UnknownTopicOrPartition, "unknown topic or partition")
	ErrGroupMaxSize           = kafkaerr.New(kerr.GroupMaxSizeReached, "share group is full")
)

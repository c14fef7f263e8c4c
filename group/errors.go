package group

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Errors the handlers answer with; each wraps the Kafka error of the same
// name, and the classic protocol's clients act on the exact code.
var (
	ErrCoordinatorNotAvailable = coordinator.ErrCoordinatorNotAvailable
	ErrNotCoordinator          = coordinator.ErrNotCoordinator
	ErrCoordinatorLoading      = coordinator.ErrCoordinatorLoading
	ErrInvalidGroupID          = kafkaerr.New(kerr.InvalidGroupID, "invalid group id")
	ErrInvalidSessionTimeout   = kafkaerr.New(kerr.InvalidSessionTimeout, "invalid session timeout")
	ErrUnknownMemberID         = kafkaerr.New(kerr.UnknownMemberID, "unknown member id")
	ErrMemberIDRequired        = kafkaerr.New(kerr.MemberIDRequired, "member id required")
	ErrIllegalGeneration       = kafkaerr.New(kerr.IllegalGeneration, "illegal generation")
	ErrRebalanceInProgress     = kafkaerr.New(kerr.RebalanceInProgress, "rebalance in progress")
	ErrInconsistentProtocol    = kafkaerr.New(kerr.InconsistentGroupProtocol, "inconsistent group protocol")
	ErrFencedInstanceID        = kafkaerr.New(kerr.FencedInstanceID, "fenced instance id")
	ErrGroupMaxSizeReached     = kafkaerr.New(kerr.GroupMaxSizeReached, "group max size reached")
	ErrGroupIDNotFound         = kafkaerr.New(kerr.GroupIDNotFound, "group id not found")
	ErrNonEmptyGroup           = kafkaerr.New(kerr.NonEmptyGroup, "non-empty group")
	ErrGroupSubscribedToTopic  = kafkaerr.New(kerr.GroupSubscribedToTopic, "group subscribed to topic")
	ErrOffsetMetadataTooLarge  = kafkaerr.New(kerr.OffsetMetadataTooLarge, "offset metadata too large")
	ErrInvalidCommitOffsetSize = kafkaerr.New(kerr.InvalidCommitOffsetSize, "invalid commit offset size")
	ErrUnknownServer           = kafkaerr.New(kerr.UnknownServerError, "unknown server error")

	// The consumer protocol's errors (KIP-848).
	ErrFencedMemberEpoch        = kafkaerr.New(kerr.FencedMemberEpoch, "fenced member epoch")
	ErrStaleMemberEpoch         = kafkaerr.New(kerr.StaleMemberEpoch, "stale member epoch")
	ErrUnreleasedInstanceID     = kafkaerr.New(kerr.UnreleasedInstanceID, "unreleased instance id")
	ErrUnsupportedAssignor      = kafkaerr.New(kerr.UnsupportedAssignor, "unsupported assignor")
	ErrInvalidRequest           = kafkaerr.New(kerr.InvalidRequest, "invalid request")
	ErrInvalidRegularExpression = kafkaerr.New(kerr.InvalidRegularExpression, "invalid regular expression")
	ErrUnsupportedVersion       = kafkaerr.New(kerr.UnsupportedVersion, "unsupported version")
)

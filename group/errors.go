package group

import "errors"

// Errors the handlers map to Kafka codes. Each is the Kafka error of the
// same name; the classic protocol's clients act on the exact code.
var (
	ErrCoordinatorNotAvailable = errors.New("coordinator not available")
	ErrNotCoordinator          = errors.New("not coordinator")
	ErrCoordinatorLoading      = errors.New("coordinator load in progress")
	ErrInvalidGroupID          = errors.New("invalid group id")
	ErrInvalidSessionTimeout   = errors.New("invalid session timeout")
	ErrUnknownMemberID         = errors.New("unknown member id")
	ErrMemberIDRequired        = errors.New("member id required")
	ErrIllegalGeneration       = errors.New("illegal generation")
	ErrRebalanceInProgress     = errors.New("rebalance in progress")
	ErrInconsistentProtocol    = errors.New("inconsistent group protocol")
	ErrFencedInstanceID        = errors.New("fenced instance id")
	ErrGroupMaxSizeReached     = errors.New("group max size reached")
	ErrGroupIDNotFound         = errors.New("group id not found")
	ErrNonEmptyGroup           = errors.New("non-empty group")
	ErrGroupSubscribedToTopic  = errors.New("group subscribed to topic")
	ErrOffsetMetadataTooLarge  = errors.New("offset metadata too large")
	ErrInvalidCommitOffsetSize = errors.New("invalid commit offset size")
	ErrUnknownServer           = errors.New("unknown server error")

	// The consumer protocol's errors (KIP-848).
	ErrFencedMemberEpoch        = errors.New("fenced member epoch")
	ErrStaleMemberEpoch         = errors.New("stale member epoch")
	ErrUnreleasedInstanceID     = errors.New("unreleased instance id")
	ErrUnsupportedAssignor      = errors.New("unsupported assignor")
	ErrInvalidRequest           = errors.New("invalid request")
	ErrInvalidRegularExpression = errors.New("invalid regular expression")
	ErrUnsupportedVersion       = errors.New("unsupported version")
)

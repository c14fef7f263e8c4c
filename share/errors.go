package share

import "errors"

// Sentinels returned by the share coordinator and the share-partition
// manager; handlers map them to Kafka error codes.
var (
	ErrNotCoordinator         = errors.New("not the coordinator of this share group")
	ErrCoordinatorUnavailable = errors.New("share coordinator not available")
	ErrUnknownMember          = errors.New("unknown member id")
	ErrFencedMemberEpoch      = errors.New("fenced member epoch")
	ErrGroupNotFound          = errors.New("group id not found")
	ErrNonEmptyGroup          = errors.New("the group has members")
	ErrInvalidRequest         = errors.New("invalid request")
	ErrInvalidRecordState     = errors.New("record state does not allow this acknowledgement")
	ErrSessionNotFound        = errors.New("share session not found")
	ErrInvalidSessionEpoch    = errors.New("invalid share session epoch")
	ErrNotLeader              = errors.New("not the leader of this partition")
	ErrUnknownTopic           = errors.New("unknown topic or partition")
	ErrGroupMaxSize           = errors.New("share group is full")
)

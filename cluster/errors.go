package cluster

import "errors"

// Sentinel errors; handlers map them to Kafka error codes.
var (
	ErrTopicExists               = errors.New("topic already exists")
	ErrUnknownTopic              = errors.New("unknown topic")
	ErrInvalidTopic              = errors.New("invalid topic")
	ErrInvalidPartitions         = errors.New("invalid partitions")
	ErrInvalidReplicationFactor  = errors.New("invalid replication factor")
	ErrInvalidReplicaAssignment  = errors.New("invalid replica assignment")
	ErrInvalidConfig             = errors.New("invalid config")
	ErrInvalidRequest            = errors.New("invalid request")
	ErrTopicDeletionDisabled     = errors.New("topic deletion disabled")
	ErrNotController             = errors.New("not controller")
	ErrTopicAuthorizationFailure = errors.New("topic authorization failed")
	// AlterPartition outcomes.
	ErrInvalidUpdateVersion = errors.New("partition epoch is stale")
	ErrFencedLeaderEpoch    = errors.New("leader epoch is stale")
	ErrIneligibleReplica    = errors.New("replica not eligible for the ISR")
	ErrNotLeader            = errors.New("not the partition leader")
)

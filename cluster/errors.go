package cluster

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Sentinel errors; each wraps the Kafka error it answers as.
var (
	ErrTopicExists               = kafkaerr.New(kerr.TopicAlreadyExists, "topic already exists")
	ErrUnknownTopic              = kafkaerr.New(kerr.UnknownTopicOrPartition, "unknown topic")
	ErrInvalidTopic              = kafkaerr.New(kerr.InvalidTopicException, "invalid topic")
	ErrInvalidPartitions         = kafkaerr.New(kerr.InvalidPartitions, "invalid partitions")
	ErrInvalidReplicationFactor  = kafkaerr.New(kerr.InvalidReplicationFactor, "invalid replication factor")
	ErrInvalidReplicaAssignment  = kafkaerr.New(kerr.InvalidReplicaAssignment, "invalid replica assignment")
	ErrInvalidConfig             = kafkaerr.New(kerr.InvalidConfig, "invalid config")
	ErrInvalidRequest            = kafkaerr.New(kerr.InvalidRequest, "invalid request")
	ErrTopicDeletionDisabled     = kafkaerr.New(kerr.TopicDeletionDisabled, "topic deletion disabled")
	ErrNotController             = kafkaerr.New(kerr.NotController, "not controller")
	ErrTopicAuthorizationFailure = kafkaerr.New(kerr.TopicAuthorizationFailed, "topic authorization failed")
	// AlterPartition outcomes.
	ErrInvalidUpdateVersion = kafkaerr.New(kerr.InvalidUpdateVersion, "partition epoch is stale")
	ErrFencedLeaderEpoch    = kafkaerr.New(kerr.FencedLeaderEpoch, "leader epoch is stale")
	ErrIneligibleReplica    = kafkaerr.New(kerr.IneligibleReplica, "replica not eligible for the ISR")
	ErrNotLeader            = kafkaerr.New(kerr.NotLeaderForPartition, "not the partition leader")
)

package group

import (
	"fmt"
	"math"
	"time"
)

// OffsetsTopic is Kafka's internal topic holding group metadata and
// committed offsets.
const OffsetsTopic = "__consumer_offsets"

// Config configures the coordinator; the fields carry Kafka's broker
// property names.
type Config struct {
	// OffsetsTopicNumPartitions is offsets.topic.num.partitions: the
	// partition count __consumer_offsets is created with. Once the topic
	// exists its real partition count decides where a group lives.
	OffsetsTopicNumPartitions int32
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor.
	// Kafka refuses to create the topic with fewer live brokers than this
	// (it answers COORDINATOR_NOT_AVAILABLE until enough have registered);
	// gokafka creates it with min(this, live brokers) instead, so that a
	// single node (or a cluster still starting) can serve groups. A topic
	// created that way keeps the smaller factor; raise it by reassignment.
	OffsetsTopicReplicationFactor int16
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes.
	OffsetsTopicSegmentBytes int64
	// OffsetsLoadBufferSize is offsets.load.buffer.size: bytes read per
	// step when loading a partition.
	OffsetsLoadBufferSize int32
	// OffsetsRetention is offsets.retention.minutes: committed offsets of
	// a group with no members expire this long after it became empty (or
	// after the commit, for groups that never had members).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetCommitTimeout is offsets.commit.timeout.ms: how long a write to
	// __consumer_offsets may wait for the ISR.
	OffsetCommitTimeout time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size.
	MaxSize int
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a
	// member of a consumer-protocol group (KIP-848) that does not
	// heartbeat for this long is removed. The broker decides it, not the
	// member.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms,
	// the interval the coordinator tells members to heartbeat at.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize is group.consumer.max.size.
	ConsumerMaxSize int
	// MigrationPolicy is group.consumer.migration.policy: which online
	// conversions between a classic group with members and a consumer
	// group (KIP-848's upgrade and downgrade) are allowed.
	MigrationPolicy MigrationPolicy
}

// MigrationPolicy is a value of group.consumer.migration.policy.
type MigrationPolicy string

// The policies, as Kafka names them; bidirectional is the default.
const (
	MigrationBidirectional MigrationPolicy = "bidirectional"
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationDisabled      MigrationPolicy = "disabled"
)

// upgradeEnabled reports whether a classic group with members may become
// a consumer group when a consumer-protocol member joins it.
func (p MigrationPolicy) upgradeEnabled() bool {
	return p == MigrationBidirectional || p == MigrationUpgrade
}

// downgradeEnabled reports whether a consumer group left with only
// classic members may become a classic group again.
func (p MigrationPolicy) downgradeEnabled() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		OffsetsTopicNumPartitions:     50,
		OffsetsTopicReplicationFactor: 3,
		OffsetsTopicSegmentBytes:      104857600,
		OffsetsLoadBufferSize:         5 << 20,
		OffsetsRetention:              10080 * time.Minute,
		OffsetsRetentionCheckInterval: 600000 * time.Millisecond,
		OffsetCommitTimeout:           5000 * time.Millisecond,
		OffsetMetadataMaxBytes:        4096,
		MinSessionTimeout:             6000 * time.Millisecond,
		MaxSessionTimeout:             1800000 * time.Millisecond,
		InitialRebalanceDelay:         3000 * time.Millisecond,
		MaxSize:                       math.MaxInt32,
		ConsumerSessionTimeout:        45000 * time.Millisecond,
		ConsumerHeartbeatInterval:     5000 * time.Millisecond,
		ConsumerMaxSize:               math.MaxInt32,
		MigrationPolicy:               MigrationBidirectional,
	}
}

// Validate reports settings the coordinator cannot work with.
func (c Config) Validate() error {
	switch {
	case c.OffsetsTopicNumPartitions < 1:
		return fmt.Errorf("offsets.topic.num.partitions must be at least 1, got %d", c.OffsetsTopicNumPartitions)
	case c.OffsetsTopicReplicationFactor < 1:
		return fmt.Errorf("offsets.topic.replication.factor must be at least 1, got %d", c.OffsetsTopicReplicationFactor)
	case c.OffsetsTopicSegmentBytes < 14:
		return fmt.Errorf("offsets.topic.segment.bytes %d too small", c.OffsetsTopicSegmentBytes)
	case c.OffsetsLoadBufferSize < 1:
		return fmt.Errorf("offsets.load.buffer.size must be positive, got %d", c.OffsetsLoadBufferSize)
	case c.OffsetsRetention < time.Minute:
		return fmt.Errorf("offsets.retention.minutes must be at least 1")
	case c.OffsetsRetentionCheckInterval <= 0:
		return fmt.Errorf("offsets.retention.check.interval.ms must be positive")
	case c.OffsetCommitTimeout <= 0:
		return fmt.Errorf("offsets.commit.timeout.ms must be positive")
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("offset.metadata.max.bytes must not be negative")
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("group.min.session.timeout.ms (%v) must not exceed group.max.session.timeout.ms (%v)", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("group.initial.rebalance.delay.ms must not be negative")
	case c.MaxSize < 1:
		return fmt.Errorf("group.max.size must be at least 1, got %d", c.MaxSize)
	case c.ConsumerSessionTimeout <= 0:
		return fmt.Errorf("group.consumer.session.timeout.ms must be positive")
	case c.ConsumerHeartbeatInterval <= 0 || c.ConsumerHeartbeatInterval >= c.ConsumerSessionTimeout:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms (%v) must be positive and below group.consumer.session.timeout.ms (%v)", c.ConsumerHeartbeatInterval, c.ConsumerSessionTimeout)
	case c.ConsumerMaxSize < 1:
		return fmt.Errorf("group.consumer.max.size must be at least 1, got %d", c.ConsumerMaxSize)
	case c.MigrationPolicy != MigrationBidirectional && c.MigrationPolicy != MigrationUpgrade &&
		c.MigrationPolicy != MigrationDowngrade && c.MigrationPolicy != MigrationDisabled:
		return fmt.Errorf("group.consumer.migration.policy must be one of bidirectional, upgrade, downgrade, disabled, got %q", c.MigrationPolicy)
	}
	return nil
}

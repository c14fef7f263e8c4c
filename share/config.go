package share

import (
	"fmt"
	"time"
)

// Config holds the broker-level share-group settings, under Kafka's
// property names. The group-level settings (share.auto.offset.reset,
// share.isolation.level, share.record.lock.duration.ms,
// share.delivery.count.limit, share.session.timeout.ms,
// share.heartbeat.interval.ms) are read per group from the metadata's
// group configs and fall back to these.
type Config struct {
	// SessionTimeout is group.share.session.timeout.ms: a member that
	// sends no heartbeat for this long leaves the group.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// RecordLockDuration is group.share.record.lock.duration.ms: how long
	// a consumer holds acquired records before they become available again.
	RecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// delivered this many times is archived instead of redelivered.
	DeliveryCountLimit int
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks:
	// the most in-flight records (between the start and end offsets) a
	// share partition holds; no new records are acquired past it.
	PartitionMaxRecordLocks int
	// MaxGroupSize is group.share.max.size.
	MaxGroupSize int
	// CheckpointInterval is group.share.checkpoint.interval.ms (gokafka's own):
	// how often a partition leader writes its share-partition start
	// offsets to the metadata quorum, so that a new leader resumes there.
	CheckpointInterval time.Duration
}

// DefaultConfig returns Kafka's defaults (gokafka's for the checkpoint).
func DefaultConfig() Config {
	return Config{
		SessionTimeout:          45 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		RecordLockDuration:      30 * time.Second,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		MaxGroupSize:            200,
		CheckpointInterval:      5 * time.Second,
	}
}

// Validate checks the settings.
func (c Config) Validate() error {
	switch {
	case c.SessionTimeout <= 0:
		return fmt.Errorf("group.share.session.timeout.ms must be positive")
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.SessionTimeout:
		return fmt.Errorf("group.share.heartbeat.interval.ms must be positive and below the session timeout")
	case c.RecordLockDuration <= 0:
		return fmt.Errorf("group.share.record.lock.duration.ms must be positive")
	case c.DeliveryCountLimit < 2 || c.DeliveryCountLimit > 10:
		return fmt.Errorf("group.share.delivery.count.limit must be between 2 and 10")
	case c.PartitionMaxRecordLocks < 100:
		return fmt.Errorf("group.share.partition.max.record.locks must be at least 100")
	case c.MaxGroupSize < 1:
		return fmt.Errorf("group.share.max.size must be positive")
	case c.CheckpointInterval <= 0:
		return fmt.Errorf("group.share.checkpoint.interval.ms must be positive")
	}
	return nil
}

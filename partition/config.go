package partition

import (
	"fmt"
	"math"
	"strconv"
)

// Config is the per-topic log configuration, named after Kafka's topic
// properties.
type Config struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	SegmentIndexBytes  int32 // segment.index.bytes: max size of one .index; roll when full
	IndexIntervalBytes int32 // index.interval.bytes
	RetentionMs        int64 // retention.ms, -1 unlimited
	RetentionBytes     int64 // retention.bytes, -1 unlimited
	MaxMessageBytes    int32 // max.message.bytes
	LogAppendTime      bool  // message.timestamp.type == LogAppendTime
	FlushMessages      int64 // flush.messages
	FlushMs            int64 // flush.ms

	// Compaction (cleanup.policy contains "compact"): the log cleaner keeps
	// the latest record of each key (cleaner.go).
	Compact                bool    // cleanup.policy contains compact
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	DeleteRetentionMs      int64   // delete.retention.ms: how long tombstones and markers outlive their cleaning
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1073741824,
		SegmentMs:          604800000,
		SegmentIndexBytes:  10485760,
		IndexIntervalBytes: 4096,
		RetentionMs:        604800000,
		RetentionBytes:     -1,
		MaxMessageBytes:    1048588,
		LogAppendTime:      false,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,

		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      86400000,
	}
}

// Validate reports settings the log cannot work with. Kafka's lower bounds:
// segment.bytes >= 14 (LegacyRecord.RECORD_OVERHEAD_V0), segment.ms >= 1,
// segment.index.bytes >= 4 (one entry is 8, so we require 8), index interval >= 0.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < 14:
		return fmt.Errorf("segment.bytes %d too small", c.SegmentBytes)
	case c.SegmentMs < 1:
		return fmt.Errorf("segment.ms %d too small", c.SegmentMs)
	case c.SegmentIndexBytes < 8:
		return fmt.Errorf("segment.index.bytes %d too small", c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("index.interval.bytes %d negative", c.IndexIntervalBytes)
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("max.message.bytes %d negative", c.MaxMessageBytes)
	case c.FlushMessages < 1:
		return fmt.Errorf("flush.messages %d too small", c.FlushMessages)
	case c.FlushMs < 0:
		return fmt.Errorf("flush.ms %d negative", c.FlushMs)
	case c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1:
		return fmt.Errorf("min.cleanable.dirty.ratio %v not in [0, 1]", c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return fmt.Errorf("min.compaction.lag.ms %d negative", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return fmt.Errorf("max.compaction.lag.ms %d too small", c.MaxCompactionLagMs)
	case c.DeleteRetentionMs < 0:
		return fmt.Errorf("delete.retention.ms %d negative", c.DeleteRetentionMs)
	}
	return nil
}

// maxSegmentMs is how long a segment may stay active: segment.ms, and for a
// compacted topic at most max.compaction.lag.ms, so that a record is
// cleanable within that lag (KIP-354).
func (c Config) maxSegmentMs() int64 {
	if c.Compact {
		return min(c.SegmentMs, c.MaxCompactionLagMs)
	}
	return c.SegmentMs
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns Kafka's "topic-partition" form, which is also the name of
// the partition's directory.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

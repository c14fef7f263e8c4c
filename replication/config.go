package replication

import (
	"math"
	"strconv"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// LogConfig derives a partition log's config from the topic's effective
// configs (topic override, dynamic broker config, static broker config,
// Kafka default).
func LogConfig(im *cluster.Image, t *cluster.TopicInfo, nodeID int32, bd cluster.BrokerDefaults) partition.Config {
	v := func(name string) string { return cluster.TopicConfigValue(im, t, nodeID, bd, name) }
	i64 := func(name string, def int64) int64 {
		n, err := strconv.ParseInt(v(name), 10, 64)
		if err != nil {
			return def
		}
		return n
	}
	i32 := func(name string, def int32) int32 {
		n := i64(name, int64(def))
		if n > math.MaxInt32 {
			return math.MaxInt32
		}
		return int32(n)
	}
	cfg := partition.DefaultConfig()
	cfg.SegmentBytes = i64("segment.bytes", cfg.SegmentBytes)
	cfg.SegmentMs = i64("segment.ms", cfg.SegmentMs)
	cfg.SegmentIndexBytes = i32("segment.index.bytes", cfg.SegmentIndexBytes)
	cfg.IndexIntervalBytes = i32("index.interval.bytes", cfg.IndexIntervalBytes)
	cfg.RetentionMs = i64("retention.ms", cfg.RetentionMs)
	cfg.RetentionBytes = i64("retention.bytes", cfg.RetentionBytes)
	cfg.MaxMessageBytes = i32("max.message.bytes", cfg.MaxMessageBytes)
	cfg.LogAppendTime = v("message.timestamp.type") == "LogAppendTime"
	cfg.FlushMessages = i64("flush.messages", cfg.FlushMessages)
	cfg.FlushMs = i64("flush.ms", cfg.FlushMs)
	return cfg
}

// minInsyncReplicas returns the topic's effective min.insync.replicas.
func minInsyncReplicas(im *cluster.Image, t *cluster.TopicInfo, nodeID int32, bd cluster.BrokerDefaults) int {
	n, err := strconv.Atoi(cluster.TopicConfigValue(im, t, nodeID, bd, "min.insync.replicas"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

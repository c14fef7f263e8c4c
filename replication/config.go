package replication

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
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
	policy := strings.Split(strings.ReplaceAll(v("cleanup.policy"), " ", ""), ",")
	cfg.Compact = slices.Contains(policy, "compact")
	if f, err := strconv.ParseFloat(v("min.cleanable.dirty.ratio"), 64); err == nil && f >= 0 && f <= 1 {
		cfg.MinCleanableDirtyRatio = f
	}
	cfg.MinCompactionLagMs = max(i64("min.compaction.lag.ms", cfg.MinCompactionLagMs), 0)
	cfg.MaxCompactionLagMs = max(i64("max.compaction.lag.ms", cfg.MaxCompactionLagMs), 1)
	cfg.DeleteRetentionMs = max(i64("delete.retention.ms", cfg.DeleteRetentionMs), 0)
	if !slices.Contains(policy, "delete") {
		// Retention deletes segments only under the delete policy; a
		// compact-only topic (__consumer_offsets) keeps its log.
		cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	}
	cfg.MaxMessageBytes = i32("max.message.bytes", cfg.MaxMessageBytes)
	cfg.LogAppendTime = v("message.timestamp.type") == "LogAppendTime"
	cfg.FlushMessages = i64("flush.messages", cfg.FlushMessages)
	cfg.FlushMs = i64("flush.ms", cfg.FlushMs)
	return cfg
}

// Config is the replica manager's configuration; the fields carry Kafka's
// broker property names.
type Config struct {
	// NodeID is node.id: the replica id this broker fetches as.
	NodeID int32
	// PeerSASL, when set, authenticates the connections this broker
	// opens to its peers' inter-broker listener
	// (sasl.mechanism.inter.broker.protocol).
	PeerSASL kgosasl.Mechanism
	// PeerTLS, when set, makes the follower fetchers' connections TLS:
	// the inter-broker listener is SSL or SASL_SSL.
	PeerTLS protocol.PeerTLS
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has not
	// caught up to the leader's log end for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchWaitMax is replica.fetch.wait.max.ms: how long a
	// follower's fetch may park on the leader.
	ReplicaFetchWaitMax time.Duration
	// ReplicaFetchMinBytes is replica.fetch.min.bytes.
	ReplicaFetchMinBytes int32
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes, per partition.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchResponseMaxBytes is replica.fetch.response.max.bytes.
	ReplicaFetchResponseMaxBytes int32
	// ReplicaFetchBackoff is replica.fetch.backoff.ms: the pause after a
	// failed fetch.
	ReplicaFetchBackoff time.Duration
	// ReplicaSocketTimeout is replica.socket.timeout.ms: bounds a
	// follower's dial and round trip.
	ReplicaSocketTimeout time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms: a producer that
	// wrote nothing to a partition for this long is forgotten there.
	ProducerIDExpiration time.Duration
	// ReplicaSelectorClass is replica.selector.class: empty (Kafka's
	// default, none) means a leader never sends a consumer elsewhere;
	// RackAwareReplicaSelector makes a leader send a consumer that names
	// its rack (client.rack) to an in-sync replica in that rack (KIP-392,
	// preferred.go).
	ReplicaSelectorClass string
	// FollowerWritesUncached is gokafka.replica.write.uncached.enable: a
	// follower writes what it replicates uncached (partition's
	// uncached.go), unless replica.selector.class lets consumers read
	// from followers.
	FollowerWritesUncached bool
	// PeerRoutes reroute the followers' connections to their leaders
	// (tests only; see protocol.PeerRoutes).
	PeerRoutes protocol.PeerRoutes
}

// DefaultConfig returns Kafka's defaults (NodeID 0).
func DefaultConfig() Config {
	return Config{
		ReplicaLagTimeMax:            30 * time.Second,
		ReplicaFetchWaitMax:          500 * time.Millisecond,
		ReplicaFetchMinBytes:         1,
		ReplicaFetchMaxBytes:         1048576,
		ReplicaFetchResponseMaxBytes: 10485760,
		ReplicaFetchBackoff:          time.Second,
		ReplicaSocketTimeout:         30 * time.Second,
		ProducerIDExpiration:         24 * time.Hour,
		FollowerWritesUncached:       true,
	}
}

// Validate applies Kafka's KafkaConfig checks for these settings.
func (c Config) Validate() error {
	switch {
	case c.NodeID < 0:
		return fmt.Errorf("node.id %d must be >= 0", c.NodeID)
	case c.ReplicaLagTimeMax <= 0:
		return errors.New("replica.lag.time.max.ms must be positive")
	case c.ReplicaFetchWaitMax < 0:
		return errors.New("replica.fetch.wait.max.ms must not be negative")
	case c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax:
		return errors.New("replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR")
	case c.ProducerIDExpiration <= 0:
		return errors.New("producer.id.expiration.ms must be positive")
	case c.ReplicaSocketTimeout <= 0:
		return errors.New("replica.socket.timeout.ms must be positive")
	case c.ReplicaFetchWaitMax > c.ReplicaSocketTimeout:
		return errors.New("replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts")
	case c.ReplicaFetchMinBytes < 0, c.ReplicaFetchMaxBytes <= 0, c.ReplicaFetchResponseMaxBytes <= 0:
		return errors.New("replica.fetch.min.bytes must not be negative and replica.fetch.max.bytes, replica.fetch.response.max.bytes must be positive")
	case c.ReplicaFetchBackoff < 0:
		return errors.New("replica.fetch.backoff.ms must not be negative")
	case c.ReplicaSelectorClass != "" && c.ReplicaSelectorClass != RackAwareReplicaSelector:
		return fmt.Errorf("replica.selector.class: class %s cannot be found (gokafka has %s)", c.ReplicaSelectorClass, RackAwareReplicaSelector)
	}
	return nil
}

package txn

import (
	"fmt"
	"time"

	"github.com/gokafka/gokafka/protocol"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// StateTopic is Kafka's internal topic holding transaction state.
const StateTopic = "__transaction_state"

// Config configures the coordinator; the fields carry Kafka's broker
// property names.
type Config struct {
	// NumPartitions is transaction.state.log.num.partitions.
	NumPartitions int32
	// PeerSASL, when set, authenticates the connections this broker
	// opens to its peers' inter-broker listener
	// (sasl.mechanism.inter.broker.protocol).
	PeerSASL kgosasl.Mechanism
	// ReplicationFactor is transaction.state.log.replication.factor. As for
	// __consumer_offsets, gokafka creates the topic with min(this, live
	// brokers) instead of refusing while too few brokers are up.
	ReplicationFactor int16
	// MinISR is transaction.state.log.min.isr, the topic's
	// min.insync.replicas, capped at the replication factor it gets.
	MinISR int32
	// SegmentBytes is transaction.state.log.segment.bytes.
	SegmentBytes int64
	// LoadBufferSize is transaction.state.log.load.buffer.size.
	LoadBufferSize int32
	// MaxTimeout is transaction.max.timeout.ms: a producer asking for a
	// longer transaction.timeout.ms gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms.
	AbortTimedOutInterval time.Duration
	// WriteTimeout bounds a write to __transaction_state and a marker
	// write (Kafka uses request.timeout.ms).
	WriteTimeout time.Duration
	// PeerTLS, when set, makes the marker connections to the other
	// brokers TLS: the inter-broker listener is SSL or SASL_SSL.
	PeerTLS protocol.PeerTLS
	// PeerRoutes reroute the marker writes to other brokers (tests only;
	// see protocol.PeerRoutes).
	PeerRoutes protocol.PeerRoutes
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		NumPartitions:         50,
		ReplicationFactor:     3,
		MinISR:                2,
		SegmentBytes:          104857600,
		LoadBufferSize:        5 << 20,
		MaxTimeout:            900000 * time.Millisecond,
		AbortTimedOutInterval: 10000 * time.Millisecond,
		WriteTimeout:          30 * time.Second,
	}
}

// Validate reports settings the coordinator cannot work with.
func (c Config) Validate() error {
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("transaction.state.log.num.partitions must be at least 1, got %d", c.NumPartitions)
	case c.ReplicationFactor < 1:
		return fmt.Errorf("transaction.state.log.replication.factor must be at least 1, got %d", c.ReplicationFactor)
	case c.MinISR < 1:
		return fmt.Errorf("transaction.state.log.min.isr must be at least 1, got %d", c.MinISR)
	case c.SegmentBytes < 14:
		return fmt.Errorf("transaction.state.log.segment.bytes %d too small", c.SegmentBytes)
	case c.LoadBufferSize < 1:
		return fmt.Errorf("transaction.state.log.load.buffer.size must be positive, got %d", c.LoadBufferSize)
	case c.MaxTimeout < time.Millisecond:
		return fmt.Errorf("transaction.max.timeout.ms must be positive")
	case c.AbortTimedOutInterval <= 0:
		return fmt.Errorf("transaction.abort.timed.out.transaction.cleanup.interval.ms must be positive")
	case c.WriteTimeout <= 0:
		return fmt.Errorf("transaction write timeout must be positive")
	}
	return nil
}

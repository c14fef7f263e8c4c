// Package confluentgo drives confluent-kafka-go (cgo, with the librdkafka it
// bundles) for the client compatibility tests in integration/clients_test.go.
// It lives in its own package so that only the tests that need it link
// librdkafka.
package confluentgo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Header is one record header; a nil Value is a null header value.
type Header struct {
	Key   string
	Value []byte
}

// Record is a record as produced or consumed. Partition and Offset are
// filled in by Consume; nil Key or Value mean null.
type Record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// LibrdkafkaVersion returns the version of the librdkafka this package runs.
func LibrdkafkaVersion() string {
	_, v := kafka.LibraryVersion()
	return v
}

// ProduceOpts configures Produce.
type ProduceOpts struct {
	Compression string // none, gzip, snappy, lz4, zstd
	Idempotent  bool
	Partition   int32 // -1: the client's partitioner
	// BatchMaxBytes, if set, is batch.size: small batches make many
	// produce requests.
	BatchMaxBytes int
}

// Produce writes recs in order and waits for every delivery report.
func Produce(ctx context.Context, bootstrap, topic string, recs []Record, o ProduceOpts) error {
	codec := o.Compression
	if codec == "" {
		codec = "none"
	}
	cfg := kafka.ConfigMap{
		"bootstrap.servers":  bootstrap,
		"compression.type":   codec,
		"enable.idempotence": o.Idempotent,
		"acks":               "all",
		"linger.ms":          5,
		"message.timeout.ms": 120000,
		"log_level":          3,
		// Tests cut connections on purpose; librdkafka's default backoff
		// (up to 10 s per reconnect) would turn each cut into a stall.
		"reconnect.backoff.ms":     10,
		"reconnect.backoff.max.ms": 200,
	}
	if o.BatchMaxBytes > 0 {
		cfg["batch.size"] = o.BatchMaxBytes
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := produceAll(ctx, p, topic, recs, o.Partition); err != nil {
		return err
	}
	return nil
}

func produceAll(ctx context.Context, p *kafka.Producer, topic string, recs []Record, partition int32) error {
	if partition < 0 {
		partition = kafka.PartitionAny
	}
	reports := make(chan kafka.Event, len(recs))
	for _, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition},
			Key:            r.Key,
			Value:          r.Value,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		for {
			err := p.Produce(m, reports)
			if err == nil {
				break
			}
			var ke kafka.Error
			if !errors.As(err, &ke) || ke.Code() != kafka.ErrQueueFull {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for range recs {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for delivery reports: %w", ctx.Err())
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return fmt.Errorf("unexpected delivery event %v", ev)
			}
			if m.TopicPartition.Error != nil {
				return fmt.Errorf("delivery failed: %w", m.TopicPartition.Error)
			}
		}
	}
	return nil
}

// ConsumeOpts configures Consume.
type ConsumeOpts struct {
	// Group subscribes in that consumer group; without it Partitions are
	// assigned and read from the beginning.
	Group      string
	Partitions []int32
	Count      int           // records to wait for
	Linger     time.Duration // keep polling this long after Count arrived
	Commit     bool          // commit synchronously before closing
	// ReadCommitted sets isolation.level=read_committed.
	ReadCommitted bool
	// Rack, when set, is client.rack (KIP-392).
	Rack string
}

// Consume reads until o.Count records arrived (plus o.Linger) or ctx ends,
// and returns what it read; on a timeout the error comes with the records
// read so far.
func Consume(ctx context.Context, bootstrap, topic string, o ConsumeOpts) ([]Record, error) {
	group := o.Group
	if group == "" {
		group = "compat-assign-only"
	}
	isolation := "read_uncommitted"
	if o.ReadCommitted {
		isolation = "read_committed"
	}
	cfg := kafka.ConfigMap{
		"bootstrap.servers":  bootstrap,
		"group.id":           group,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"isolation.level":    isolation,
		"session.timeout.ms": 10000,
		"fetch.wait.max.ms":  200,
		"log_level":          3,
	}
	if o.Rack != "" {
		cfg["client.rack"] = o.Rack
	}
	c, err := kafka.NewConsumer(&cfg)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if o.Group != "" {
		err = c.Subscribe(topic, nil)
	} else {
		var tps []kafka.TopicPartition
		for _, p := range o.Partitions {
			tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
		}
		err = c.Assign(tps)
	}
	if err != nil {
		return nil, err
	}
	var out []Record
	var lingerEnd time.Time
	for {
		if len(out) >= o.Count {
			if lingerEnd.IsZero() {
				lingerEnd = time.Now().Add(o.Linger)
			}
			if !time.Now().Before(lingerEnd) {
				break
			}
		} else if ctx.Err() != nil {
			return out, fmt.Errorf("got %d of %d records: %w", len(out), o.Count, ctx.Err())
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			r := Record{
				Partition: ev.TopicPartition.Partition,
				Offset:    int64(ev.TopicPartition.Offset),
				Key:       ev.Key,
				Value:     ev.Value,
			}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, r)
		case kafka.Error:
			if ev.IsFatal() || ev.Code() != kafka.ErrTransport && ev.Code() != kafka.ErrAllBrokersDown {
				return out, fmt.Errorf("consumer error: %w", ev)
			}
		}
	}
	if o.Commit && len(out) > 0 {
		if _, err := c.Commit(); err != nil {
			return out, fmt.Errorf("commit: %w", err)
		}
	}
	closed = true
	return out, c.Close()
}

// Txn is one transaction for Transactions: its records, then commit or
// abort.
type Txn struct {
	Records []Record
	Commit  bool
}

// Transactions runs txns in order with one transactional producer, writing
// to partition 0 of topic.
func Transactions(ctx context.Context, bootstrap, topic, transactionalID string, txns []Txn) error {
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":      bootstrap,
		"transactional.id":       transactionalID,
		"transaction.timeout.ms": 60000,
		"message.timeout.ms":     30000,
		"log_level":              3,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		return fmt.Errorf("InitTransactions: %w", err)
	}
	for i, tx := range txns {
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("transaction %d: BeginTransaction: %w", i, err)
		}
		if err := produceAll(ctx, p, topic, tx.Records, 0); err != nil {
			return fmt.Errorf("transaction %d: %w", i, err)
		}
		if tx.Commit {
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			return fmt.Errorf("transaction %d (commit %v): %w", i, tx.Commit, err)
		}
	}
	return nil
}

// ErrorCode returns the Kafka error name in err when it carries one.
func ErrorCode(err error) string {
	var ke kafka.Error
	if errors.As(err, &ke) {
		return ke.Code().String()
	}
	return ""
}

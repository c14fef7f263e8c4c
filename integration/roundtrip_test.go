package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRoundTripKgo produces 10,000 records per codec with franz-go (acks=all,
// idempotent, explicit partitions) and reads them back unchanged and in
// order. Batches are stored as sent, so this is also the check that the
// broker neither mangles compressed batches nor mis-assigns offsets inside them.
func TestRoundTripKgo(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	const n = 10000
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	for i, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "roundtrip-kgo-" + c.name
			createTopic(t, adm, topic, 3, nil)
			prod := b.client(t,
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerBatchCompression(c.codec),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			sent := produceAll(t, prod, topic, genRecords(n, 3, uint64(100+i)))
			checkAckOffsets(t, sent, nil)
			got := consumeKgo(t, b, topic, partitionList(3), n)
			checkRecords(t, sent, got)

			// Exactly n records were stored: nothing duplicated past what we read.
			ends := endOffsets(t, adm, topic)
			want := countPerPartition(sent)
			for p := range int32(3) {
				if ends[p] != want[p] {
					t.Errorf("partition %d: end offset %d, want %d", p, ends[p], want[p])
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// sarama

func saramaConfig(v sarama.KafkaVersion, codec sarama.CompressionCodec) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "gokafka-integration-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = codec
	cfg.Producer.Flush.Messages = 100
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	// One request in flight per broker keeps per-partition order even if a
	// request is retried (sarama is not idempotent here).
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	return cfg
}

func toSarama(topic string, r rec) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{
		Topic:     topic,
		Partition: r.Partition,
		Key:       sarama.ByteEncoder(r.Key),
		Value:     sarama.ByteEncoder(r.Value),
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return m
}

func fromSarama(m *sarama.ConsumerMessage) rec {
	r := rec{
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp.UnixMilli(),
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, hdr{string(h.Key), h.Value})
	}
	return r
}

// consumeSarama reads every partition from the oldest offset until the
// partition's expected count arrived.
func consumeSarama(t *testing.T, addr, topic string, cfg *sarama.Config, want map[int32]int64) []rec {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer c.Close()
	var got []rec
	for p, n := range want {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%d): %v", p, err)
		}
		timeout := time.After(90 * time.Second)
		for count := int64(0); count < n; {
			select {
			case m := <-pc.Messages():
				got = append(got, fromSarama(m))
				count++
			case err := <-pc.Errors():
				t.Logf("sarama partition %d consumer error: %v", p, err)
			case <-timeout:
				pc.Close()
				t.Fatalf("sarama: partition %d: read %d of %d messages within 90s", p, count, n)
			}
		}
		pc.Close()
	}
	return got
}

func TestRoundTripSarama(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	const n = 2000

	t.Run("V3_6_0_0-sync-snappy", func(t *testing.T) {
		topic := "roundtrip-sarama-sync"
		createTopic(t, adm, topic, 3, nil)
		cfg := saramaConfig(sarama.V3_6_0_0, sarama.CompressionSnappy)
		p, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatalf("NewSyncProducer: %v", err)
		}
		defer p.Close()

		sent := genRecords(n, 3, 200)
		msgs := make([]*sarama.ProducerMessage, len(sent))
		for i, r := range sent {
			msgs[i] = toSarama(topic, r)
		}
		for start := 0; start < len(msgs); start += 500 {
			if err := p.SendMessages(msgs[start:min(start+500, len(msgs))]); err != nil {
				var pe sarama.ProducerErrors
				if errors.As(err, &pe) && len(pe) > 0 {
					t.Fatalf("SendMessages: %d failed; first: %v", len(pe), pe[0].Err)
				}
				t.Fatalf("SendMessages: %v", err)
			}
		}
		for i, m := range msgs {
			sent[i].Offset = m.Offset
		}
		checkAckOffsets(t, sent, nil)
		got := consumeSarama(t, b.Addr(), topic, cfg, countPerPartition(sent))
		checkRecords(t, sent, got)
	})

	t.Run("V0_11_0_0-async-gzip", func(t *testing.T) {
		topic := "roundtrip-sarama-async"
		createTopic(t, adm, topic, 3, nil)
		cfg := saramaConfig(sarama.V0_11_0_0, sarama.CompressionGZIP)
		p, err := sarama.NewAsyncProducer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatalf("NewAsyncProducer: %v", err)
		}
		sent := genRecords(n, 3, 201)
		go func() {
			for i, r := range sent {
				m := toSarama(topic, r)
				m.Metadata = i
				p.Input() <- m
			}
		}()
		timeout := time.After(90 * time.Second)
		for acked := 0; acked < n; acked++ {
			select {
			case m := <-p.Successes():
				sent[m.Metadata.(int)].Offset = m.Offset
			case e := <-p.Errors():
				p.AsyncClose()
				t.Fatalf("async produce failed: %v", e.Err)
			case <-timeout:
				p.AsyncClose()
				t.Fatalf("only %d of %d messages acknowledged within 90s", acked, n)
			}
		}
		if err := p.Close(); err != nil {
			t.Errorf("closing async producer: %v", err)
		}
		checkAckOffsets(t, sent, nil)
		got := consumeSarama(t, b.Addr(), topic, cfg, countPerPartition(sent))
		checkRecords(t, sent, got)
	})
}

// ---------------------------------------------------------------------------
// segmentio/kafka-go

// keyBalancer routes a genRecords message back to the partition it was
// generated for (key-NNNNNNN → NNNNNNN mod number of partitions).
var keyBalancer = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
	i, err := strconv.Atoi(strings.TrimPrefix(string(m.Key), "key-"))
	if err != nil {
		panic(fmt.Sprintf("unexpected key %q", m.Key))
	}
	return partitions[i%len(partitions)]
})

func toKafkaGo(r rec) kafka.Message {
	m := kafka.Message{Key: r.Key, Value: r.Value, Time: time.UnixMilli(r.Timestamp)}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}

func fromKafkaGo(m kafka.Message) rec {
	r := rec{
		Partition: int32(m.Partition),
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Time.UnixMilli(),
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, hdr{h.Key, h.Value})
	}
	return r
}

func TestRoundTripKafkaGo(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)

	t.Run("writer-reader-lz4", func(t *testing.T) {
		const n = 2000
		topic := "roundtrip-kafkago"
		createTopic(t, adm, topic, 3, nil)
		w := &kafka.Writer{
			Addr:         kafka.TCP(b.Addr()),
			Topic:        topic,
			Balancer:     keyBalancer,
			RequiredAcks: kafka.RequireAll,
			Compression:  kafka.Lz4,
			BatchSize:    200,
			BatchTimeout: 5 * time.Millisecond,
			MaxAttempts:  5,
		}
		defer w.Close()
		sent := genRecords(n, 3, 300)
		msgs := make([]kafka.Message, len(sent))
		for i, r := range sent {
			msgs[i] = toKafkaGo(r)
		}
		ctx := testCtx(t, 2*time.Minute)
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}

		var got []rec
		for p, cnt := range countPerPartition(sent) {
			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers:   []string{b.Addr()},
				Topic:     topic,
				Partition: int(p),
				MinBytes:  1,
				MaxBytes:  10 << 20,
				MaxWait:   500 * time.Millisecond,
			})
			if err := r.SetOffset(kafka.FirstOffset); err != nil {
				t.Fatalf("SetOffset: %v", err)
			}
			rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			for i := int64(0); i < cnt; i++ {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					cancel()
					r.Close()
					t.Fatalf("partition %d: ReadMessage after %d of %d: %v", p, i, cnt, err)
				}
				got = append(got, fromKafkaGo(m))
			}
			cancel()
			r.Close()
		}
		// kafka-go's Writer does not report offsets; a fresh topic starts at 0.
		for p, rs := range byPartition(got) {
			if len(rs) > 0 && rs[0].Offset != 0 {
				t.Errorf("partition %d: first offset %d, want 0", p, rs[0].Offset)
			}
		}
		checkRecords(t, sent, got)
	})

	t.Run("conn-zstd", func(t *testing.T) {
		topic := "roundtrip-kafkago-conn"
		createTopic(t, adm, topic, 1, nil)
		ctx := testCtx(t, time.Minute)
		conn, err := kafka.DialLeader(ctx, "tcp", b.Addr(), topic, 0)
		if err != nil {
			t.Fatalf("DialLeader: %v", err)
		}
		defer conn.Close()

		sent := genRecords(400, 1, 301)
		for start := 0; start < len(sent); start += 100 {
			var msgs []kafka.Message
			for _, r := range sent[start : start+100] {
				msgs = append(msgs, toKafkaGo(r))
			}
			conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, _, base, _, err := conn.WriteCompressedMessagesAt(kafka.Zstd.Codec(), msgs...)
			if err != nil {
				t.Fatalf("WriteCompressedMessagesAt: %v", err)
			}
			if base != int64(start) {
				t.Errorf("batch %d acknowledged at base offset %d, want %d", start/100, base, start)
			}
		}
		for i := range sent {
			sent[i].Offset = int64(i)
		}

		first, last, err := conn.ReadOffsets()
		if err != nil {
			t.Fatalf("ReadOffsets: %v", err)
		}
		if first != 0 || last != int64(len(sent)) {
			t.Errorf("ReadOffsets = (%d, %d), want (0, %d)", first, last, len(sent))
		}

		var got []rec
		for attempt := 0; len(got) < len(sent) && attempt < 50; attempt++ {
			if _, err := conn.Seek(int64(len(got)), kafka.SeekAbsolute); err != nil {
				t.Fatalf("Seek: %v", err)
			}
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			batch := conn.ReadBatch(1, 10<<20)
			for {
				m, err := batch.ReadMessage()
				if err != nil {
					break
				}
				got = append(got, fromKafkaGo(m))
			}
			if err := batch.Close(); err != nil {
				t.Fatalf("reading batch at %d: %v", len(got), err)
			}
		}
		checkRecords(t, sent, got)
	})
}

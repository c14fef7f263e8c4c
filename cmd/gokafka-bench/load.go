package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loadConfig is the validated workload of one produce, consume or
// end-to-end run against a bootstrap address.
type loadConfig struct {
	brokers       []string
	topic         string
	acks          string // "0", "1" or "all"
	idempotent    bool
	recordSize    int
	partitions    int
	rf            int
	compression   string
	linger        time.Duration
	batchMaxBytes int
	producers     int
	duration      time.Duration

	// consume: stop at these (0 means no limit) or at the end offsets
	// captured when the run starts.
	maxBytes, maxRecords int64

	// produce: stop once this many value bytes are sent (0: no limit;
	// the duration still applies).
	totalBytes int64

	// end-to-end
	rate   int
	warmup time.Duration
}

// MB is 10^6 bytes; every byte count is of record values only.
const MB = 1e6

// metric is one measured number. Higher says which direction is better,
// for reading ratios.
type metric struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Higher bool    `json:"higher_is_better"`
}

type result struct {
	Metrics []metric `json:"metrics"`
	// Bytes is how many value bytes the measured phase wrote or read, the
	// divisor of CPU per MB.
	Bytes int64 `json:"bytes"`
}

func (r *result) add(name, unit string, v float64, higher bool) {
	r.Metrics = append(r.Metrics, metric{name, unit, v, higher})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func acksOpt(acks string) kgo.Acks {
	switch acks {
	case "0":
		return kgo.NoAck()
	case "1":
		return kgo.LeaderAck()
	default:
		return kgo.AllISRAcks()
	}
}

func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}

func (c *loadConfig) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RequiredAcks(acksOpt(c.acks)),
		kgo.ProducerBatchCompression(codec(c.compression)),
		kgo.ProducerLinger(c.linger),
		kgo.ProducerBatchMaxBytes(int32(c.batchMaxBytes)),
		// kgo retries without limit by default; a server that stops
		// acknowledging fails the round after a minute instead.
		kgo.RecordDeliveryTimeout(time.Minute),
	}
	if !c.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return append(opts, clientTLS...)
}

// ensureTopic creates the topic (tolerating one that exists) and waits until
// every partition has a leader and rf in-sync replicas.
func ensureTopic(ctx context.Context, brokers []string, topic string, partitions, rf int) error {
	cl, err := newClient(brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(15000)
	resp, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s (%d partitions, RF %d): %v %s", topic, partitions, rf, err, resp.ErrMessage)
	}
	for {
		err := topicReady(ctx, cl, topic, partitions, rf)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("topic %s not ready: %v", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// topicReady asks for the topic's metadata directly (kadm.Metadata could
// answer from the client's cache) and checks every partition's leader and
// ISR.
func topicReady(ctx context.Context, cl *kgo.Client, topic string, partitions, rf int) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata lists %d topics", len(resp.Topics))
	}
	td := resp.Topics[0]
	if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
		return fmt.Errorf("metadata: %v", err)
	}
	if len(td.Partitions) != partitions {
		return fmt.Errorf("%d of %d partitions", len(td.Partitions), partitions)
	}
	for _, p := range td.Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 || len(p.ISR) < rf {
			return fmt.Errorf("partition %d: leader %d, ISR %v, err %v", p.Partition, p.Leader, p.ISR, err)
		}
	}
	return nil
}

// values returns distinct record values to cycle through, enough that no
// value repeats within a batch (so compression sees no cross-record
// repeats). Each value is half random bytes and half a repeated pattern,
// so it compresses to roughly half.
func values(size, batchMaxBytes int) [][]byte {
	n := max(1024, 2*batchMaxBytes/max(size, 1))
	n = min(n, max(1, (64<<20)/max(size, 1)))
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		v := make([]byte, size)
		for j := range v {
			if j < size/2 {
				v[j] = byte(r.Uint32())
			} else {
				v[j] = byte('a' + j%16)
			}
		}
		out[i] = v
	}
	return out
}

// produceLatencyHook records the round trip of every produce request: from
// the start of writing the request to having read its response (kgo
// HookBrokerE2E). With acks=0 there is no response and nothing is recorded.
type produceLatencyHook struct{ h *syncHistogram }

func (p produceLatencyHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 0 || e2e.Err() != nil || e2e.TimeToRead == 0 {
		return
	}
	p.h.record(e2e.DurationE2E())
}

// runProduce produces as fast as the clients go for c.duration with
// c.producers concurrent clients, then flushes, and reports the records
// acknowledged over the time from the first produce to the flush's end.
//
// It reports two latencies: the produce request round trip (see
// produceLatencyHook) and the per-record latency from the Produce call to
// the record's promise, which adds linger and buffering in the client.
func runProduce(ctx context.Context, c *loadConfig) (*result, error) {
	var reqLat, recLat syncHistogram
	vals := values(c.recordSize, c.batchMaxBytes)
	var acked, queued, errCount atomic.Int64
	var firstErr atomic.Pointer[error]

	clients := make([]*kgo.Client, c.producers)
	for i := range clients {
		cl, err := kgo.NewClient(append(c.producerOpts(), kgo.WithHooks(produceLatencyHook{&reqLat}))...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		clients[i] = cl
	}
	// Open the connections and load the topic's metadata before the clock
	// starts.
	for _, cl := range clients {
		if _, err := kadm.NewClient(cl).Metadata(ctx, c.topic); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	end := start.Add(c.duration)
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() {
			k := i * 7919
			for time.Now().Before(end) && ctx.Err() == nil {
				if c.totalBytes > 0 && queued.Add(int64(c.recordSize)) > c.totalBytes {
					break
				}
				sent := time.Now()
				r := &kgo.Record{Value: vals[k%len(vals)]}
				k++
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err != nil {
						if errCount.Add(1) == 1 {
							firstErr.Store(&err)
						}
						return
					}
					recLat.record(time.Since(sent))
					acked.Add(1)
				})
			}
			if err := cl.Flush(ctx); err != nil && errCount.Add(1) == 1 {
				firstErr.Store(&err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := errCount.Load(); n > 0 {
		return nil, fmt.Errorf("%d produce errors, first: %v", n, *firstErr.Load())
	}

	n := acked.Load()
	bytes := n * int64(c.recordSize)
	r := &result{Bytes: bytes}
	r.add("records/s", "rec/s", float64(n)/elapsed.Seconds(), true)
	r.add("MB/s", "MB/s", float64(bytes)/MB/elapsed.Seconds(), true)
	req := reqLat.snapshot()
	if c.acks != "0" {
		r.add("produce req p50", "ms", ms(req.quantile(0.50)), false)
		r.add("produce req p99", "ms", ms(req.quantile(0.99)), false)
		// How the client batched: a produce request carries one batch
		// per partition its broker leads, so the request rate depends on
		// where the leaders are as well as on the load (kfake places
		// each partition's leader at random).
		if nreq := req.count(); nreq > 0 {
			r.add("produce requests/s", "req/s", float64(nreq)/elapsed.Seconds(), false)
			r.add("records per produce request", "rec", float64(n)/float64(nreq), true)
		}
	}
	rec := recLat.snapshot()
	r.add("record ack p50", "ms", ms(rec.quantile(0.50)), false)
	r.add("record ack p99", "ms", ms(rec.quantile(0.99)), false)
	return r, nil
}

// partitionBounds lists each partition's start and end offsets of the
// config's topic, through a client of its own. Right after a topic is
// created a node may not know yet that it leads a partition, so retriable
// errors are retried for a while, as clients do.
func (c *loadConfig) partitionBounds(ctx context.Context) (map[int32][2]int64, error) {
	cl, err := newClient(c.brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := listBounds(ctx, cl, c.topic)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return b, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// partitionConsumer is a client that reads the config's topic, without a
// group, each partition from its offset in offsets.
func (c *loadConfig) partitionConsumer(offsets map[int32]kgo.Offset, opts ...kgo.Opt) (*kgo.Client, error) {
	return newClient(c.brokers, append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offsets}),
	}, opts...)...)
}

func listBounds(ctx context.Context, cl *kgo.Client, topic string) (map[int32][2]int64, error) {
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(starts.Error(), ends.Error()); err != nil {
		return nil, err
	}
	out := map[int32][2]int64{}
	for p, o := range ends[topic] {
		s, ok := starts.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("no start offset for partition %d", p)
		}
		out[p] = [2]int64{s.Offset, o.Offset}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	return out, nil
}

// runConsume reads the topic from the start of every partition until it has
// read up to the end offsets captured when it started, or maxBytes /
// maxRecords if one is set and reached first.
func runConsume(ctx context.Context, c *loadConfig) (*result, error) {
	bounds, err := c.partitionBounds(ctx)
	if err != nil {
		return nil, err
	}
	offsets := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition → end offset not yet reached
	for p, b := range bounds {
		offsets[p] = kgo.NewOffset().At(b[0])
		if b[1] > b[0] {
			remaining[p] = b[1]
		}
	}
	cl, err := c.partitionConsumer(offsets)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	var records, bytes int64
	start := time.Now()
	for len(remaining) > 0 {
		if c.maxBytes > 0 && bytes >= c.maxBytes || c.maxRecords > 0 && records >= c.maxRecords {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("consume stopped after %d records: %v", records, ctx.Err())
		}
		if err := fs.Err0(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if c.maxBytes > 0 && bytes >= c.maxBytes || c.maxRecords > 0 && records >= c.maxRecords {
				return // past a limit: the rest of this fetch is not counted
			}
			records++
			bytes += int64(len(r.Value))
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	elapsed := time.Since(start)
	r := &result{Bytes: bytes}
	r.add("records/s", "rec/s", float64(records)/elapsed.Seconds(), true)
	r.add("MB/s", "MB/s", float64(bytes)/MB/elapsed.Seconds(), true)
	r.add("records read", "rec", float64(records), true)
	return r, nil
}

// runEndToEnd produces c.rate records per second for warmup+duration from
// one client while a consumer in the same process reads them, and reports
// the time from just before each Produce call to the consumer receiving
// the record. The send time travels in the first 8 bytes of the value as
// nanoseconds on this process's monotonic clock. Records due during the
// warm-up are read but not measured.
func runEndToEnd(ctx context.Context, c *loadConfig) (*result, error) {
	if c.recordSize < 8 {
		return nil, fmt.Errorf("end-to-end records need at least 8 bytes, got %d", c.recordSize)
	}
	base := time.Now()
	bounds, err := c.partitionBounds(ctx)
	if err != nil {
		return nil, err
	}
	offsets := map[int32]kgo.Offset{}
	for p, b := range bounds {
		offsets[p] = kgo.NewOffset().At(b[1])
	}
	cons, err := c.partitionConsumer(offsets, kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(c.producerOpts()...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).Metadata(ctx, c.topic); err != nil {
		return nil, err
	}

	var lat histogram // owned by the consumer goroutine until consDone
	var received, acked, errCount atomic.Int64
	var firstErr atomic.Pointer[error]
	var measureFrom atomic.Int64 // ns since base; set when the warm-up ends
	consDone := make(chan struct{})
	var consErr error
	cctx, cancelCons := context.WithCancel(ctx)
	defer cancelCons()
	go func() {
		defer close(consDone)
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			if err := fs.Err0(); err != nil {
				consErr = err
				return
			}
			now := int64(time.Since(base))
			from := measureFrom.Load() // set before the first produce
			fs.EachRecord(func(r *kgo.Record) {
				received.Add(1)
				if len(r.Value) < 8 {
					return
				}
				at := int64(binary.BigEndian.Uint64(r.Value))
				if at >= from {
					lat.record(time.Duration(now - at))
				}
			})
		}
	}()

	// Record n is due at start + n/rate; the loop sends what is due every
	// millisecond. Its value carries the moment it is handed to the
	// client: stamping the due time instead would add the pacing tick (up
	// to a millisecond and more on a busy machine) to every latency. A
	// producer falling behind (a full buffer blocks Produce) would then
	// hide latency, so the largest lag behind the schedule is reported.
	vals := values(c.recordSize, c.batchMaxBytes)
	start := time.Now()
	warmEnd := start.Add(c.warmup)
	end := warmEnd.Add(c.duration)
	measureFrom.Store(int64(warmEnd.Sub(base)))
	due := func(n int64) time.Duration {
		return start.Sub(base) + time.Duration(float64(n)*float64(time.Second)/float64(c.rate))
	}
	firstMeasured := int64(math.Ceil(c.warmup.Seconds() * float64(c.rate)))
	var maxLag time.Duration
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var n int64
	for now := time.Now(); now.Before(end) && ctx.Err() == nil; now = <-tick.C {
		target := int64(now.Sub(start).Seconds() * float64(c.rate))
		for ; n < target; n++ {
			v := make([]byte, c.recordSize)
			copy(v, vals[n%int64(len(vals))])
			sendAt := time.Since(base)
			if n >= firstMeasured {
				maxLag = max(maxLag, sendAt-due(n))
			}
			binary.BigEndian.PutUint64(v, uint64(sendAt))
			prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					if errCount.Add(1) == 1 {
						firstErr.Store(&err)
					}
					return
				}
				acked.Add(1)
			})
		}
	}
	produceElapsed := time.Since(warmEnd)
	measuredN := max(0, n-firstMeasured) // records due after the warm-up
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	if k := errCount.Load(); k > 0 {
		return nil, fmt.Errorf("%d produce errors, first: %v", k, *firstErr.Load())
	}
	// The consumer is done once it has everything that was acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() < acked.Load() {
		select {
		case <-consDone:
			if consErr != nil {
				return nil, fmt.Errorf("consumer: %v", consErr)
			}
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("consumer received %d of %d records within 30s of the last produce", received.Load(), acked.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancelCons()
	<-consDone
	r := &result{Bytes: measuredN * int64(c.recordSize)}
	r.add("produced records/s", "rec/s", float64(measuredN)/produceElapsed.Seconds(), true)
	r.add("max lag behind send schedule", "ms", ms(maxLag), false)
	r.add("e2e p50", "ms", ms(lat.quantile(0.50)), false)
	r.add("e2e p99", "ms", ms(lat.quantile(0.99)), false)
	r.add("e2e p999", "ms", ms(lat.quantile(0.999)), false)
	r.add("e2e max", "ms", ms(time.Duration(lat.max)*time.Microsecond), false)
	r.add("latency samples", "rec", float64(lat.count()), true)
	return r, nil
}

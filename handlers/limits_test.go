package handlers

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// limitsMeta is a Metadata holding one image the test builds: topic "t"
// led by this broker (1).
type limitsMeta struct {
	mu  sync.Mutex
	img *cluster.Image
}

var errNotHere = errors.New("not supported in this test")

func (f *limitsMeta) Image() *cluster.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img
}
func (f *limitsMeta) Watch(func(prev, next *cluster.Image)) {}
func (f *limitsMeta) PeerClientID(role string) string       { return "gokafka-test-" + role }
func (f *limitsMeta) CreateTopics(_ context.Context, specs []cluster.TopicSpec, _ bool) []error {
	return allErrsNotHere(len(specs))
}
func (f *limitsMeta) DeleteTopics(_ context.Context, names []string) []error {
	return allErrsNotHere(len(names))
}

// allErrsNotHere answers each of n items errNotHere, as a Metadata
// answers one error per item.
func allErrsNotHere(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = errNotHere
	}
	return errs
}
func (f *limitsMeta) CreatePartitions(context.Context, string, int32, [][]int32, bool) error {
	return errNotHere
}
func (f *limitsMeta) SetTopicConfigs(context.Context, string, map[string]string, bool) error {
	return errNotHere
}
func (f *limitsMeta) SetBrokerConfigs(context.Context, string, map[string]string, bool) error {
	return errNotHere
}
func (f *limitsMeta) AlterPartition(context.Context, cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
	return cluster.PartitionInfo{}, errNotHere
}
func (f *limitsMeta) NodeID() int32                          { return 1 }
func (f *limitsMeta) BrokerDefaults() cluster.BrokerDefaults { return cluster.BrokerDefaults{} }

// limitsStack serves topic "t" with n partitions whose replicas (and ISR)
// are replicas, led here, on an in-memory disk.
func limitsStack(t *testing.T, cfg Config, n int, replicas ...int32) *Handlers {
	t.Helper()
	top := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{7}}
	for p := range int32(n) {
		top.Partitions = append(top.Partitions, cluster.PartitionInfo{Partition: p, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: replicas, ISR: replicas})
	}
	meta := &limitsMeta{img: &cluster.Image{
		ClusterID: "limits", ControllerID: 1,
		Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1, Host: "127.0.0.1", Port: 9092}, 2: {NodeID: 2, Host: "127.0.0.1", Port: 9093}},
		Topics:  map[string]*cluster.TopicInfo{"t": top},
		IDs:     map[cluster.TopicID]string{top.ID: "t"},
	}}
	configFor := func(topic string) partition.Config {
		im := meta.Image()
		return replication.LogConfig(im, im.Topics[topic], 1, meta.BrokerDefaults())
	}
	logs, err := partition.OpenManager(partition.OSFS(), partition.ManagerConfig{
		Dirs: []string{t.TempDir()}, NodeID: 1, ClusterID: "limits", Defaults: partition.DefaultConfig(),
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour, FlushSchedulerInterval: time.Hour,
	}, configFor, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	rm, err := replication.NewManager(logs, meta, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	return Register(protocol.NewRegistry(), cfg, meta, rm)
}

// testBatch is a v2 batch of n records of valueLen bytes, as a producer
// sends it.
func testBatch(n, valueLen int) []byte {
	var recs []byte
	val := bytes.Repeat([]byte{'v'}, valueLen)
	for i := range n {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, int64(len(val)))
		body = append(body, val...)
		body = binary.AppendVarint(body, 0)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, partition.BatchHeaderSize, partition.BatchHeaderSize+len(recs))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], 1000)
	binary.BigEndian.PutUint64(b[35:], uint64(1000+n-1))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func fill(t *testing.T, h *Handlers, p int32, batches, valueLen int) int {
	t.Helper()
	size := 0
	for range batches {
		b := testBatch(1, valueLen)
		size = len(b)
		if _, err := h.replicas.Produce(context.Background(), partition.TopicPartition{Topic: "t", Partition: p}, b, -1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return size
}

func fetchReq(version int16, maxBytes int32, parts ...kmsg.FetchRequestTopicPartition) *protocol.Request {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(version)
	r.MaxBytes = maxBytes
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = "t", [16]byte{7}
	t.Partitions = parts
	r.Topics = []kmsg.FetchRequestTopic{t}
	return &protocol.Request{Key: 1, Version: version, Body: r}
}

func fetchPartition(p int32, offset int64, maxBytes int32) kmsg.FetchRequestTopicPartition {
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, offset, maxBytes, -1
	return fp
}

func recordBytes(resp kmsg.Response) (total int, parts int) {
	for _, t := range resp.(*kmsg.FetchResponse).Topics {
		for _, p := range t.Partitions {
			total += len(p.RecordBatches)
			parts++
		}
	}
	return total, parts
}

// fetch.max.bytes bounds the response whatever MaxBytes the client asks;
// each partition's max is honoured within it.
func TestFetchMaxBytesCapsClientMaxBytes(t *testing.T) {
	const capBytes = 10000
	h := limitsStack(t, Config{NodeID: 1, FetchMaxBytes: capBytes}, 3, 1)
	var batch int
	for p := range int32(3) {
		batch = fill(t, h, p, 10, 1000)
	}
	for _, v := range []int16{2, 4, 16} { // v2 has no MaxBytes at all
		resp, err := h.fetch(context.Background(), fetchReq(v, 1<<30,
			fetchPartition(0, 0, 1<<30), fetchPartition(1, 0, 1<<30), fetchPartition(2, 0, 1<<30)))
		if err != nil {
			t.Fatal(err)
		}
		if total, _ := recordBytes(resp); total > capBytes || total < capBytes-batch {
			t.Fatalf("v%d: %d record bytes returned, fetch.max.bytes is %d (batches of %d)", v, total, capBytes, batch)
		}
	}
	// A partition's own maximum still applies within the bound.
	resp, _ := h.fetch(context.Background(), fetchReq(4, 1<<30, fetchPartition(0, 0, int32(2*batch))))
	if total, _ := recordBytes(resp); total != 2*batch {
		t.Fatalf("%d bytes for a partition max of 2 batches (%d)", total, 2*batch)
	}
}

// A MaxBytes of zero or less returns the first batch and nothing more, as
// Kafka's minOneMessage does; it does not lift the bound.
func TestFetchNonPositiveMaxBytesReturnsOneBatch(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1}, 2, 1)
	batch := fill(t, h, 0, 5, 100)
	fill(t, h, 1, 5, 100)
	for _, mb := range []int32{0, -1} {
		resp, err := h.fetch(context.Background(), fetchReq(4, mb, fetchPartition(0, 0, 1<<20), fetchPartition(1, 0, 1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		if total, _ := recordBytes(resp); total != batch {
			t.Fatalf("MaxBytes %d: %d bytes returned, want one batch (%d)", mb, total, batch)
		}
	}
}

// A partition named thousands of times in one Fetch is read and answered
// once, where first named, with the parameters it was last named with;
// the response pins one file, not thousands.
func TestFetchPartitionListedManyTimesAnsweredOnce(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1}, 2, 1)
	// Ranges beyond 32 KiB go out as file regions (partition/region.go).
	batch := fill(t, h, 0, 5, 20000)
	fill(t, h, 1, 3, 20000)
	for _, v := range []int16{4, 13} {
		var parts []kmsg.FetchRequestTopicPartition
		for range 5000 {
			parts = append(parts, fetchPartition(0, 0, 1<<20))
		}
		parts = append(parts, fetchPartition(1, 0, 1<<20))
		parts = append(parts, fetchPartition(0, 2, 1<<20)) // the last word on partition 0
		req := fetchReq(v, 1<<30, parts...)
		req.Conn = &protocol.ConnInfo{ZeroCopy: true}
		out, err := h.fetch(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		sr, ok := out.(*protocol.SplicedResponse)
		if !ok {
			t.Fatalf("v%d: response %T, want a spliced response", v, out)
		}
		resp := sr.Response.(*kmsg.FetchResponse)
		var got []int32
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				got = append(got, p.Partition)
				if p.ErrorCode != 0 {
					t.Fatalf("v%d: partition %d error %v", v, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		if fmt.Sprint(got) != "[0 1]" || len(resp.Topics) != 1 {
			t.Fatalf("v%d: %d partitions answered in %d topics, want partitions 0 and 1 in one", v, len(got), len(resp.Topics))
		}
		if n := countOpenFiles(sr); n != 2 {
			t.Fatalf("v%d: response pins %d files, want 2", v, n)
		}
		sr.Close()
		// Partition 0 was read from offset 2, its last fetch offset.
		req.Conn = nil
		out, _ = h.fetch(context.Background(), req)
		if n := len(out.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); n != 3*batch {
			t.Fatalf("v%d: partition 0 returned %d bytes, want the 3 batches from offset 2 (%d)", v, n, 3*batch)
		}
	}
}

// countOpenFiles counts the file regions a spliced response carries: each
// stands in its records field as a 16-byte placeholder (a record batch is
// never that short).
func countOpenFiles(sr *protocol.SplicedResponse) int {
	n := 0
	for _, t := range sr.Response.(*kmsg.FetchResponse).Topics {
		for _, p := range t.Partitions {
			if len(p.RecordBatches) == 16 {
				n++
			}
		}
	}
	return n
}

// A produce naming many partitions appends them on a bounded number of
// goroutines and waits for acks=all once, not on one goroutine per entry.
func TestProduceManyPartitionsUsesBoundedGoroutines(t *testing.T) {
	const parts = 300
	// Replicas 1 and 2 in the ISR, and broker 2 never fetches: every
	// acks=all wait lasts the whole timeout.
	h := limitsStack(t, Config{NodeID: 1}, parts, 1, 2)
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := range int32(parts) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, testBatch(1, 10)
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = []kmsg.ProduceRequestTopic{rt}

	base := runtime.NumGoroutine()
	done := make(chan kmsg.Response, 1)
	go func() {
		resp, err := h.produce(context.Background(), &protocol.Request{Key: 0, Version: 9, Body: r})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	peak := 0
	var resp kmsg.Response
	for resp == nil {
		peak = max(peak, runtime.NumGoroutine()-base)
		select {
		case resp = <-done:
		case <-time.After(time.Millisecond):
		}
	}
	if peak > 100 {
		t.Fatalf("a produce of %d partitions ran %d goroutines at once", parts, peak)
	}
	for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
		if p.ErrorCode != kerr.RequestTimedOut.Code {
			t.Fatalf("partition %d: %v, want REQUEST_TIMED_OUT", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

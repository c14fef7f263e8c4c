package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/protocol"
)

// FuzzHandlers feeds fuzzed request bodies, for every API key and version
// a broker serves, to the handlers of a real single-node broker (the
// whole stack below them: metadata quorum, logs, coordinators). Unlike
// the connection, which recovers a handler's panic and closes the
// socket, the fuzz calls the handler bare: any panic is a failure.
//
// The inputs are (API index, version, body): the index picks one of the
// served APIs and the version is taken modulo its range, so every input
// reaches a handler rather than the dispatch's refusal of unknown keys.
// The seed corpus (every API at every version with an empty body, plus
// requests about a real topic) runs as a plain test.
func FuzzHandlers(f *testing.F) {
	srv := fuzzBroker(f)
	apis := srv.Versions()
	for i, api := range apis {
		for v := api.MinVersion; v <= api.MaxVersion; v++ {
			req := kmsg.RequestForKey(api.ApiKey)
			if req == nil {
				continue
			}
			req.SetVersion(v)
			f.Add(uint8(i), uint8(v-api.MinVersion), req.AppendTo(nil))
		}
	}
	for _, req := range fuzzSeedRequests() {
		for i, api := range apis {
			if api.ApiKey == req.Key() && req.GetVersion() >= api.MinVersion {
				f.Add(uint8(i), uint8(req.GetVersion()-api.MinVersion), req.AppendTo(nil))
			}
		}
	}
	f.Fuzz(func(t *testing.T, index, version uint8, body []byte) {
		api := apis[int(index)%len(apis)]
		v := api.MinVersion + int16(version)%(api.MaxVersion-api.MinVersion+1)
		req := kmsg.RequestForKey(api.ApiKey)
		req.SetVersion(v)
		if err := req.ReadFrom(body); err != nil {
			return // the connection closes on an undecodable body
		}
		if !fuzzBounded(req) {
			return
		}
		fn, ok := srv.Handler(api.ApiKey, v)
		if !ok {
			t.Fatalf("%s v%d listed but not served", kmsg.NameForKey(api.ApiKey), v)
		}
		// Long polls (Fetch, ShareFetch, JoinGroup) end with the context,
		// as they do when a connection closes.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		// A handler that outlives its context by far is a hang: a
		// connection that sent this would never be served again.
		watchdog := time.AfterFunc(20*time.Second, func() {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			panic(fmt.Sprintf("%s v%d still running 20s after its context ended; body %x\n%s", kmsg.NameForKey(api.ApiKey), v, body, buf))
		})
		defer watchdog.Stop()
		resp, err := fn(ctx, &protocol.Request{
			Key: api.ApiKey, Version: v, ClientID: "fuzz", Body: req,
			Conn: &protocol.ConnInfo{ID: 1, RemoteAddr: "127.0.0.1:1", LocalAddr: "127.0.0.1:2"},
		})
		if err != nil || resp == nil {
			return
		}
		if sr, ok := resp.(*protocol.SplicedResponse); ok {
			sr.Close()
			return
		}
		// Whatever a handler answers must encode at the request's version.
		resp.SetVersion(v)
		resp.AppendTo(nil)
	})
}

// fuzzBounded keeps out requests whose only effect would be to fill the
// fuzzing machine's disk: thousands of partitions created in one request
// are a resource question (partition and file limits), not a decoding
// one.
func fuzzBounded(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			if t.NumPartitions > 4 || len(t.ReplicaAssignment) > 4 {
				return false
			}
		}
		return len(r.Topics) <= 4
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			if t.Count > 8 {
				return false
			}
		}
		return len(r.Topics) <= 4
	}
	return true
}

var (
	fuzzOnce sync.Once
	fuzzSrv  *broker.Server
	fuzzErr  error
)

// fuzzBroker starts one broker for the whole fuzzing process (each fuzz
// worker is its own process and starts its own).
func fuzzBroker(f *testing.F) *broker.Server {
	fuzzOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gokafka-fuzz-")
		if err != nil {
			fuzzErr = err
			return
		}
		s, err := loadConfig("")
		if err != nil {
			fuzzErr = err
			return
		}
		s.values["listeners"] = "PLAINTEXT://127.0.0.1:0"
		s.values["log.dirs"] = dir
		s.values["auto.create.topics.enable"] = "false"
		s.values["group.initial.rebalance.delay.ms"] = "0"
		cfg, err := s.brokerConfig()
		if err != nil {
			fuzzErr = err
			return
		}
		fuzzSrv, fuzzErr = broker.Start(context.Background(), cfg, zerolog.Nop())
		if fuzzErr != nil {
			os.RemoveAll(dir)
			return
		}
		// The topic the seed requests name.
		fn, _ := fuzzSrv.Handler(int16(kmsg.CreateTopics), 4)
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.SetVersion(4)
		ct.TimeoutMillis = 10000
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "fuzz", 2, 1
		ct.Topics = append(ct.Topics, topic)
		if _, fuzzErr = fn(context.Background(), &protocol.Request{Key: int16(kmsg.CreateTopics), Version: 4, Body: ct, Conn: &protocol.ConnInfo{}}); fuzzErr != nil {
			return
		}
		fuzzCleanup = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fuzzSrv.Shutdown(ctx)
			os.RemoveAll(dir)
		}
	})
	if fuzzErr != nil {
		f.Fatalf("start broker: %v", fuzzErr)
	}
	return fuzzSrv
}

var fuzzCleanup = func() {}

// TestMain stops the fuzzing broker once every test and fuzz target of
// the package has run.
func TestMain(m *testing.M) {
	code := m.Run()
	fuzzCleanup()
	os.Exit(code)
}

// fuzzSeedRequests are well-formed requests about the topic "fuzz", so
// the fuzzer starts from paths that reach the log, the groups and the
// transactions rather than stopping at UNKNOWN_TOPIC_OR_PARTITION.
func fuzzSeedRequests() []kmsg.Request {
	var out []kmsg.Request
	add := func(r kmsg.Request) {
		r.SetVersion(r.MaxVersion())
		out = append(out, r)
	}
	batch := fuzzBatch()

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "fuzz"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	add(produce)
	p3 := *produce
	p3.SetVersion(3)
	out = append(out, &p3)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "fuzz"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	add(fetch)
	f4 := *fetch
	f4.SetVersion(4)
	out = append(out, &f4)

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("fuzz")
	meta.Topics = append(meta.Topics, mt)
	add(meta)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "fuzz"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = 0
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	add(lo)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 100
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	join.Protocols = append(join.Protocols, jp)
	add(join)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "fuzz"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	add(commit)

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr("tx")
	init.TransactionTimeoutMillis = 60000
	add(init)

	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = "g848", 0, 1000
	cgh.SubscribedTopicNames = []string{"fuzz"}
	add(cgh)

	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	cr := kmsg.NewIncrementalAlterConfigsRequestResource()
	cr.ResourceType, cr.ResourceName = kmsg.ConfigResourceTypeTopic, "fuzz"
	cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cc.Name, cc.Value = "retention.ms", kmsg.StringPtr("1000")
	cr.Configs = append(cr.Configs, cc)
	cfg.Resources = append(cfg.Resources, cr)
	add(cfg)
	return out
}

// fuzzBatch is a valid v2 record batch of one record.
func fuzzBatch() []byte {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	var recs []byte
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recs = rec.AppendTo(recs)
	b := kmsg.RecordBatch{
		Magic:                2,
		LastOffsetDelta:      0,
		FirstTimestamp:       1,
		MaxTimestamp:         1,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              recs,
		PartitionLeaderEpoch: -1,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

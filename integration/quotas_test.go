package integration

// Client quotas (KIP-546 admin APIs, KIP-13/KIP-124 enforcement): set and
// read back through kadm on one node and on a three-node cluster (where a
// non-controller forwards the change), refused as Kafka refuses bad
// entries, and enforced: a producer held to 1 MB/s produces at that rate
// and sees throttle_time_ms.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = strp(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func setQuota(e kadm.ClientQuotaEntity, key string, v float64) kadm.AlterClientQuotaEntry {
	return kadm.AlterClientQuotaEntry{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}
}

// showQuotas renders described quotas as sorted "entity: key=value" lines.
func showQuotas(qs kadm.DescribedClientQuotas) string {
	var lines []string
	for _, q := range qs {
		var ent []string
		for _, c := range q.Entity {
			n := "<default>"
			if c.Name != nil {
				n = *c.Name
			}
			ent = append(ent, c.Type+"="+n)
		}
		sort.Strings(ent)
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		sort.Strings(vals)
		lines = append(lines, strings.Join(ent, ",")+": "+strings.Join(vals, ","))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func mustAlterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	res, err := adm.AlterClientQuotas(testCtx(t, 30*time.Second), entries)
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %v: %v (%s)", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

func describeAll(t *testing.T, adm *kadm.Client) string {
	t.Helper()
	qs, err := adm.DescribeClientQuotas(testCtx(t, 30*time.Second), false, nil)
	if err != nil {
		t.Fatalf("DescribeClientQuotas: %v", err)
	}
	return showQuotas(qs)
}

func TestClientQuotasRoundTripOneNode(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	ctx := testCtx(t, 60*time.Second)

	mustAlterQuotas(t, adm,
		setQuota(quotaEntity("client-id", "app"), "producer_byte_rate", 1048576),
		setQuota(quotaEntity("user", "<default>"), "consumer_byte_rate", 2048),
		setQuota(quotaEntity("user", "ANONYMOUS", "client-id", "<default>"), "request_percentage", 25.5),
	)
	want := "client-id=<default>,user=ANONYMOUS: request_percentage=25.5\n" +
		"client-id=app: producer_byte_rate=1.048576e+06\n" +
		"user=<default>: consumer_byte_rate=2048"
	if got := describeAll(t, adm); got != want {
		t.Fatalf("described:\n%s\nwant:\n%s", got, want)
	}

	// Filters: exact, default and any, strict or not.
	for _, tc := range []struct {
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 0, MatchName: strp("app")}}, "client-id=app: producer_byte_rate=1.048576e+06"},
		{false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 1}}, "client-id=<default>,user=ANONYMOUS: request_percentage=25.5"},
		{true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 1}}, ""},
		{true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, "user=<default>: consumer_byte_rate=2048"},
		{false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, "client-id=<default>,user=ANONYMOUS: request_percentage=25.5\nuser=<default>: consumer_byte_rate=2048"},
		{false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 0, MatchName: strp("ANONYMOUS")}, {Type: "client-id", MatchType: 2}}, "client-id=<default>,user=ANONYMOUS: request_percentage=25.5"},
	} {
		qs, err := adm.DescribeClientQuotas(ctx, tc.strict, tc.comps)
		if err != nil {
			t.Fatalf("DescribeClientQuotas %+v: %v", tc.comps, err)
		}
		if got := showQuotas(qs); got != tc.want {
			t.Errorf("strict=%v %+v:\n%s\nwant:\n%s", tc.strict, tc.comps, got, tc.want)
		}
	}

	// Validate-only changes nothing; removing the last key drops the entity.
	if res, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{setQuota(quotaEntity("client-id", "other"), "producer_byte_rate", 1000)}); err != nil || res[0].Err != nil {
		t.Fatalf("validate-only: %v %v", err, res)
	}
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "<default>"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}}})
	want = "client-id=<default>,user=ANONYMOUS: request_percentage=25.5\nclient-id=app: producer_byte_rate=1.048576e+06"
	if got := describeAll(t, adm); got != want {
		t.Fatalf("after removal:\n%s\nwant:\n%s", got, want)
	}

	// Quotas are metadata: they survive a restart.
	b.Restart()
	adm = b.admin(t)
	eventually(t, 30*time.Second, func() error {
		qs, err := adm.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			return err
		}
		if got := showQuotas(qs); got != want {
			return fmt.Errorf("after restart:\n%s\nwant:\n%s", got, want)
		}
		return nil
	})
}

func TestClientQuotasInvalidEntriesRefusedAsKafka(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	ctx := testCtx(t, 60*time.Second)

	bad := []struct {
		name  string
		entry kadm.AlterClientQuotaEntry
	}{
		{"unknown key", setQuota(quotaEntity("client-id", "a"), "bogus_rate", 1)},
		{"unknown entity type", setQuota(quotaEntity("group", "g"), "producer_byte_rate", 1)},
		{"fractional byte rate", setQuota(quotaEntity("client-id", "b"), "producer_byte_rate", 10.5)},
		{"non-positive value", setQuota(quotaEntity("client-id", "c"), "consumer_byte_rate", -1)},
		{"empty entity", setQuota(nil, "producer_byte_rate", 1)},
		{"empty name", setQuota(quotaEntity("user", ""), "producer_byte_rate", 1)},
		{"ip with client-id", setQuota(quotaEntity("ip", "10.0.0.1", "client-id", "d"), "connection_creation_rate", 1)},
		{"client key on ip", setQuota(quotaEntity("ip", "10.0.0.1"), "producer_byte_rate", 1)},
	}
	var entries []kadm.AlterClientQuotaEntry
	for _, b := range bad {
		entries = append(entries, b.entry)
	}
	// A valid entry in the same request is applied on its own.
	entries = append(entries, setQuota(quotaEntity("client-id", "good"), "producer_byte_rate", 4096))
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	if len(res) != len(entries) {
		t.Fatalf("%d results for %d entries", len(res), len(entries))
	}
	for i, r := range res[:len(bad)] {
		if !errors.Is(r.Err, kerr.InvalidRequest) {
			t.Errorf("%s: %v (%s), want INVALID_REQUEST", bad[i].name, r.Err, r.ErrMessage)
		}
	}
	if r := res[len(bad)]; r.Err != nil {
		t.Fatalf("valid entry: %v (%s)", r.Err, r.ErrMessage)
	}
	if got, want := describeAll(t, adm), "client-id=good: producer_byte_rate=4096"; got != want {
		t.Fatalf("described:\n%s\nwant:\n%s", got, want)
	}

	// Describe filters Kafka refuses.
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "group", MatchType: 2}}); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Errorf("unknown entity type in a filter: %v, want UNSUPPORTED_VERSION", err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}, {Type: "user", MatchType: 1}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("repeated entity type in a filter: %v, want INVALID_REQUEST", err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: 2}, {Type: "client-id", MatchType: 2}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("ip with client-id in a filter: %v, want INVALID_REQUEST", err)
	}
}

func TestClientQuotasRoundTripThreeNodes(t *testing.T) {
	c := startCluster(t, nil)
	cl := c.client(t)
	ctx := testCtx(t, 90*time.Second)

	ctrl, err := c.controller(1)
	if err != nil {
		t.Fatal(err)
	}
	follower := int32(1)
	if ctrl == 1 {
		follower = 2
	}
	// Sent to a node that is not the controller: it forwards the change
	// and answers once it has applied it, so it reads it back at once.
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: strp("fwd")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 65536}}
	bogus := kmsg.NewAlterClientQuotasRequestEntry()
	bogus.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: strp("bogus")}}
	bogus.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "bogus", Value: 1}}
	alter.Entries = append(alter.Entries, e, bogus)
	resp, err := alter.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil {
		t.Fatalf("AlterClientQuotas to node %d: %v", follower, err)
	}
	codes := map[string]int16{}
	for _, re := range resp.Entries {
		codes[*re.Entity[0].Name] = re.ErrorCode
	}
	if codes["fwd"] != 0 || codes["bogus"] != kerr.InvalidRequest.Code {
		t.Fatalf("codes %v, want fwd=0 bogus=%d", codes, kerr.InvalidRequest.Code)
	}
	describe := func(id int32) (string, error) {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		r, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			return "", err
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return "", err
		}
		var qs kadm.DescribedClientQuotas
		for _, en := range r.Entries {
			var q kadm.DescribedClientQuota
			for _, p := range en.Entity {
				q.Entity = append(q.Entity, kadm.ClientQuotaEntityComponent{Type: p.Type, Name: p.Name})
			}
			for _, v := range en.Values {
				q.Values = append(q.Values, kadm.ClientQuotaValue{Key: v.Key, Value: v.Value})
			}
			qs = append(qs, q)
		}
		return showQuotas(qs), nil
	}
	want := "client-id=fwd: producer_byte_rate=65536"
	if got, err := describe(follower); err != nil || got != want {
		t.Fatalf("node %d right after its alter: %q %v, want %q", follower, got, err, want)
	}
	// Every node applies it.
	for id := int32(1); id <= 3; id++ {
		eventually(t, 30*time.Second, func() error {
			got, err := describe(id)
			if err == nil && got != want {
				err = fmt.Errorf("node %d: %q, want %q", id, got, want)
			}
			return err
		})
	}
	// kadm, whichever node it picks.
	mustAlterQuotas(t, c.admin(t),
		setQuota(quotaEntity("user", "<default>", "client-id", "<default>"), "request_percentage", 200),
		setQuota(quotaEntity("client-id", "tiny"), "producer_byte_rate", 1024))
	want = "client-id=<default>,user=<default>: request_percentage=200\n" + want + "\nclient-id=tiny: producer_byte_rate=1024"
	for id := int32(1); id <= 3; id++ {
		eventually(t, 30*time.Second, func() error {
			got, err := describe(id)
			if err == nil && got != want {
				err = fmt.Errorf("node %d: %q, want %q", id, got, want)
			}
			return err
		})
	}

	// Every broker enforces them: 30 KB to each node's partition is three
	// times what 1 KB/s allows in the window, so each leader throttles.
	c.createTopic(t, "quota-everywhere", 3, nil)
	var mu sync.Mutex
	throttledBy := map[int32]bool{}
	hook := brokerThrottleFunc(func(meta kgo.BrokerMetadata, d time.Duration) {
		mu.Lock()
		throttledBy[meta.NodeID] = true
		mu.Unlock()
	})
	tiny := c.client(t, kgo.ClientID("tiny"), kgo.DefaultProduceTopic("quota-everywhere"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(hook))
	value := make([]byte, 1000)
	rand.Read(value)
	var recs []*kgo.Record
	for p := range int32(3) {
		for range 30 {
			recs = append(recs, &kgo.Record{Partition: p, Value: value})
		}
	}
	leaders := map[int32]bool{}
	for p := range int32(3) {
		leaders[c.leader(t, "quota-everywhere", p).Leader] = true
	}
	// Not waited for: the records after a throttle wait it out.
	for _, r := range recs {
		tiny.Produce(ctx, r, nil)
	}
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for id := range leaders {
			if !throttledBy[id] {
				return fmt.Errorf("leader %d did not throttle (throttled by %v)", id, throttledBy)
			}
		}
		return nil
	})
}

type brokerThrottleFunc func(kgo.BrokerMetadata, time.Duration)

func (f brokerThrottleFunc) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		f(meta, d)
	}
}

// throttleHook counts the throttles kgo is told of.
type throttleHook struct {
	n     atomic.Int64
	after atomic.Int64
	maxMs atomic.Int64
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, after bool) {
	if d <= 0 {
		return
	}
	h.n.Add(1)
	if after {
		h.after.Add(1)
	}
	for {
		cur := h.maxMs.Load()
		if d.Milliseconds() <= cur || h.maxMs.CompareAndSwap(cur, d.Milliseconds()) {
			return
		}
	}
}

func TestProducerThrottledToItsByteRate(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	createTopic(t, adm, "quota-produce", 1, nil)
	const quota = 1 << 20 // 1 MB/s
	mustAlterQuotas(t, adm, setQuota(quotaEntity("client-id", "throttled-producer"), "producer_byte_rate", quota))

	hook := &throttleHook{}
	cl := b.client(t,
		kgo.ClientID("throttled-producer"),
		kgo.DefaultProduceTopic("quota-produce"),
		// A request is counted whole even when it crosses the quota (as
		// in Kafka), and kgo has several in flight: small requests keep
		// that overshoot small next to the 10 s measured.
		kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerLinger(0),
		// The quota counts bytes on the wire: keep them the bytes counted
		// here.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithHooks(hook),
	)
	// Produce as fast as the client lets us for 10 s, counting the bytes
	// acknowledged within those 10 s.
	const span = 10 * time.Second
	value := make([]byte, 1000)
	rand.Read(value)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var acked atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(span)
	for time.Now().Before(end) {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					failed.Store(err)
				}
				return
			}
			if time.Now().Before(end) {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	cancel()
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("produce failed: %v", err)
	}
	rate := float64(acked.Load()) / span.Seconds()
	report := fmt.Sprintf("producer held to %d B/s: %.0f B/s over %v (%.2f of its quota); %d throttles seen by kgo, longest %d ms",
		quota, rate, span, rate/quota, hook.n.Load(), hook.maxMs.Load())
	t.Log(report)
	testReport(t, report)
	if math.Abs(rate-quota)/quota > 0.20 {
		t.Errorf("produced %.0f B/s with a quota of %d B/s: more than 20%% off", rate, quota)
	}
	if hook.n.Load() == 0 {
		t.Fatal("kgo saw no throttle_time_ms")
	}
	if hook.after.Load() != hook.n.Load() {
		t.Errorf("%d of %d throttles were not applied after the response (KIP-219)", hook.n.Load()-hook.after.Load(), hook.n.Load())
	}
}

func TestConsumerThrottledSeesThrottleAndReadsEverything(t *testing.T) {
	// Two one-second samples: a throttled consumer waits seconds, not the
	// default window's eleven.
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_QUOTA_WINDOW_NUM": "2"}})
	adm := b.admin(t)
	createTopic(t, adm, "quota-fetch", 1, nil)
	const records = 1000
	value := make([]byte, 1000)
	rand.Read(value)
	// Batches well below what the quota allows in a window: as in Kafka,
	// a batch larger than that could never be returned to a throttled
	// consumer.
	prod := b.client(t, kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(32<<10))
	for i := range records {
		prod.Produce(context.Background(), &kgo.Record{Value: value, Key: []byte(fmt.Sprint(i))}, nil)
	}
	if err := prod.Flush(testCtx(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// 1 MB against 256 KB/s over a two-second window (a fetch may take
	// 256 KB): the consumer is throttled before it has read everything.
	mustAlterQuotas(t, adm, setQuota(quotaEntity("client-id", "throttled-consumer"), "consumer_byte_rate", 256<<10))
	hook := &throttleHook{}
	cons := b.client(t, kgo.ClientID("throttled-consumer"), kgo.ConsumeTopics("quota-fetch"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(64<<10), kgo.WithHooks(hook))
	ctx := testCtx(t, 60*time.Second)
	seen := 0
	for seen < records {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", seen, records, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != fmt.Sprint(seen) {
				t.Fatalf("record %d has key %q", seen, r.Key)
			}
			seen++
		})
	}
	if hook.n.Load() == 0 {
		t.Fatal("kgo saw no throttle_time_ms on fetches")
	}
}

func TestRequestTimeQuotaThrottlesAnyRequest(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	// 0.01 % of a handler: one millisecond of handler time per ten-second
	// window, which a few dozen Metadata requests use up.
	mustAlterQuotas(t, adm, setQuota(quotaEntity("client-id", "busy-admin"), "request_percentage", 0.01))
	hook := &throttleHook{}
	cl := b.client(t, kgo.ClientID("busy-admin"), kgo.WithHooks(hook))
	ctx := testCtx(t, 60*time.Second)
	var throttled int32
	for i := 0; i < 2000 && throttled == 0; i++ {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		throttled = resp.ThrottleMillis
	}
	if throttled <= 0 {
		t.Fatal("2000 Metadata requests with a 0.01 % request quota were never throttled")
	}
	// Request-time throttles are bounded to one quota window.
	if throttled > 1000 {
		t.Fatalf("throttle_time_ms %d, want at most one window (1000)", throttled)
	}
	if hook.n.Load() == 0 {
		t.Fatal("kgo saw no throttle")
	}
}

func TestBrokerToBrokerTrafficIsExemptFromQuotas(t *testing.T) {
	c := startCluster(t, nil)
	adm := c.admin(t)
	// Every client id without its own quota, including the followers'
	// fetchers, gets a tiny default byte rate; the producer has its own.
	mustAlterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 1024}, {Key: "consumer_byte_rate", Value: 1024}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "exempt-test-producer"), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 1 << 30}, {Key: "consumer_byte_rate", Value: 1 << 30}}},
	)
	c.createTopic(t, "quota-replicated", 1, nil)
	// Quotas reach every node before the load starts.
	for id := int32(1); id <= 3; id++ {
		cl := c.client(t)
		eventually(t, 30*time.Second, func() error {
			r, err := kmsg.NewPtrDescribeClientQuotasRequest().RequestWith(testCtx(t, 10*time.Second), cl.Broker(int(id)))
			if err == nil && len(r.Entries) != 2 {
				err = fmt.Errorf("node %d has %d quota entities", id, len(r.Entries))
			}
			return err
		})
	}
	prod := c.client(t, kgo.ClientID("exempt-test-producer"), kgo.DefaultProduceTopic("quota-replicated"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1000)
	rand.Read(value)
	ctx := testCtx(t, 60*time.Second)
	// 2 MB acks=all: the followers fetch it at far more than 1 KB/s, or
	// the acknowledgements would never come.
	for range 2000 {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	c.waitFullISR(t, "quota-replicated", 0)
}

func TestLongPollWaitIsNotCountedAsRequestTime(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	createTopic(t, adm, "quota-idle", 1, nil)
	// 5 %: half a second of handler time per ten seconds. A consumer of an
	// empty topic spends nearly all its time parked in long polls, which
	// Kafka does not count (purgatory); counted, it would be 100 %.
	mustAlterQuotas(t, adm, setQuota(quotaEntity("client-id", "idle-consumer"), "request_percentage", 5))
	hook := &throttleHook{}
	cl := b.client(t, kgo.ClientID("idle-consumer"), kgo.WithHooks(hook))
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	topics, err := adm.ListTopics(testCtx(t, 30*time.Second), "quota-idle")
	if err != nil {
		t.Fatal(err)
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "quota-idle"
	rt.TopicID = topics["quota-idle"].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx := testCtx(t, 60*time.Second)
	// Eight long polls: four seconds parked.
	for i := range 8 {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if resp.ThrottleMillis > 0 {
			t.Fatalf("long poll %d throttled %d ms: parked time was counted as request time", i, resp.ThrottleMillis)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch %d: %+v", i, resp)
		}
	}
}

func TestWaitingInJoinGroupIsNotCountedAsRequestTime(t *testing.T) {
	// The first join of an empty group waits out the initial rebalance
	// delay: two seconds of waiting, no work.
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "2000"}})
	adm := b.admin(t)
	// 5 %: half a second of handler time per ten seconds.
	mustAlterQuotas(t, adm, setQuota(quotaEntity("client-id", "joining-member"), "request_percentage", 5))
	cl := b.client(t, kgo.ClientID("joining-member"))
	ctx := testCtx(t, 60*time.Second)
	join := func(member string) *kmsg.JoinGroupResponse {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "quota-group", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("JoinGroup: %v", err)
		}
		return resp
	}
	resp := join("")
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		resp = join(resp.MemberID)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("JoinGroup: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.ThrottleMillis > 0 {
		t.Fatalf("JoinGroup throttled %d ms: its wait was counted as request time", resp.ThrottleMillis)
	}
}

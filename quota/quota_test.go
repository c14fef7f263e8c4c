package quota

import (
	"math"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func newTestQuotas(l Limits) *Quotas {
	q := New(DefaultConfig())
	q.Update(l)
	return q
}

func TestRatePadsTheWindowUntilItIsFull(t *testing.T) {
	cfg := DefaultConfig()
	var r rate
	r.record(cfg, 1000, t0.UnixMilli())
	// One sample: the span is padded to WindowNum-1 windows.
	if w := r.windowSize(cfg, t0.UnixMilli()); w != 10_000 {
		t.Fatalf("window size %d ms, want 10000", w)
	}
	if got := r.measure(cfg, t0.UnixMilli()); got != 100 {
		t.Fatalf("rate %v, want 100/s", got)
	}
	// 12.5 s later the first sample has expired (11 windows) and a new one
	// holds 2000: span is padded again from that sample.
	r.record(cfg, 2000, at(12_500).UnixMilli())
	if got := r.measure(cfg, at(12_500).UnixMilli()); got != 200 {
		t.Fatalf("rate after expiry %v, want 200/s", got)
	}
}

func TestRateUsesTheRealSpanOnceFull(t *testing.T) {
	cfg := DefaultConfig()
	var r rate
	for s := int64(0); s <= 10; s++ {
		r.record(cfg, 500, at(s*1000).UnixMilli())
	}
	// 11 samples at 0..10 s, 5500 in all, over a span of 10.5 s.
	if got, want := r.measure(cfg, at(10_500).UnixMilli()), 5500/10.5; math.Abs(got-want) > 1e-9 {
		t.Fatalf("rate %v, want %v", got, want)
	}
	if len(r.samples) != 11 {
		t.Fatalf("%d samples, want 11", len(r.samples))
	}
}

func TestThrottleTimeBringsTheRateBackToTheQuota(t *testing.T) {
	// O*W/(W+X) = T: 2000/s observed over 10 s against 1000/s needs 10 s.
	if got := throttleTime(2000, 1000, 10_000); got != 10_000 {
		t.Fatalf("throttle %d ms, want 10000", got)
	}
	if got := throttleTime(1000, 1000, 10_000); got != 0 {
		t.Fatalf("throttle at the quota %d ms, want 0", got)
	}
	if got := throttleTime(1000.5, 1000, 1_000); got != 1 {
		t.Fatalf("throttle %d ms, want 1 (rounded)", got)
	}
}

func TestProduceWithinQuotaIsNotThrottled(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("p")}: {ProducerByteRate: 1000}})
	// 10 s padded window: 10000 bytes at once is exactly the quota.
	if d := q.Produce.Record(AnonymousUser, "p", 10_000, t0); d != 0 {
		t.Fatalf("throttled %v at the quota", d)
	}
}

func TestProduceOverQuotaIsThrottledAsKafkaComputes(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("p")}: {ProducerByteRate: 1000}})
	// 20000 bytes over the padded 10 s window: 2000/s, twice the quota.
	if d := q.Produce.Record(AnonymousUser, "p", 20_000, t0); d != 10*time.Second {
		t.Fatalf("throttle %v, want 10s", d)
	}
	// Another client id has no quota.
	if d := q.Produce.Record(AnonymousUser, "other", 1e9, t0); d != 0 {
		t.Fatalf("client without a quota throttled %v", d)
	}
	// Once every sample has expired the client starts afresh.
	if d := q.Produce.Record(AnonymousUser, "p", 100, at(11_000)); d != 0 {
		t.Fatalf("throttled %v after the window passed", d)
	}
}

func TestRequestThrottleIsBoundedToOneWindow(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("c")}: {RequestPercentage: 10}})
	// 5 s of handler time in 10 s is 50%, five times 10%: Kafka would need
	// 40 s but bounds request throttles to quota.window.size.seconds.
	if d := q.Request.Record(AnonymousUser, "c", TimePercentage(5*time.Second), t0); d != time.Second {
		t.Fatalf("throttle %v, want 1s", d)
	}
}

func TestByteRateThrottleIsNotBounded(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("p")}: {ProducerByteRate: 1000}})
	if d := q.Produce.Record(AnonymousUser, "p", 60_000, t0); d != 50*time.Second {
		t.Fatalf("throttle %v, want 50s", d)
	}
}

func TestPrecedenceFollowsKafka(t *testing.T) {
	u, c := Of(AnonymousUser), Of("app")
	levels := []Entity{
		{u, c},
		{u, DefaultName},
		{User: u},
		{DefaultName, c},
		{DefaultName, DefaultName},
		{User: DefaultName},
		{ClientID: c},
		{ClientID: DefaultName},
	}
	// With levels i..7 configured (value i+1 at level i), level i wins.
	for i := range levels {
		l := Limits{}
		for j := i; j < len(levels); j++ {
			l[levels[j]] = map[string]float64{ProducerByteRate: float64(j + 1)}
		}
		q := newTestQuotas(l)
		got, ok := q.Produce.Quota(AnonymousUser, "app")
		if !ok || got != float64(i+1) {
			t.Errorf("levels %d..7 configured: quota %v (%v), want %d", i+1, got, ok, i+1)
		}
	}
}

func TestUserQuotaIsSharedByTheUsersClients(t *testing.T) {
	q := newTestQuotas(Limits{{User: DefaultName}: {ProducerByteRate: 1000}})
	if d := q.Produce.Record(AnonymousUser, "a", 10_000, t0); d != 0 {
		t.Fatalf("throttled %v within the quota", d)
	}
	// Another client of the same user counts against the same rate.
	if d := q.Produce.Record(AnonymousUser, "b", 10_000, t0); d != 10*time.Second {
		t.Fatalf("second client throttle %v, want 10s (shared user quota)", d)
	}
}

func TestDefaultClientQuotaIsCountedPerClient(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: DefaultName}: {ProducerByteRate: 1000}})
	if d := q.Produce.Record(AnonymousUser, "a", 10_000, t0); d != 0 {
		t.Fatalf("throttled %v within the quota", d)
	}
	if d := q.Produce.Record(AnonymousUser, "b", 10_000, t0); d != 0 {
		t.Fatalf("client b throttled %v: a <default> quota is per client id", d)
	}
}

func TestChangingAQuotaKeepsTheMeasuredRate(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("p")}: {ProducerByteRate: 10_000}})
	q.Produce.Record(AnonymousUser, "p", 20_000, t0)
	q.Update(Limits{{ClientID: Of("p")}: {ProducerByteRate: 1000}})
	// 20000 already counted plus 0: 2000/s against 1000/s.
	if d := q.Produce.Record(AnonymousUser, "p", 0, t0); d != 10*time.Second {
		t.Fatalf("throttle %v, want 10s", d)
	}
	q.Update(nil)
	if d := q.Produce.Record(AnonymousUser, "p", 1e9, t0); d != 0 {
		t.Fatalf("throttled %v with the quota removed", d)
	}
}

func TestUnrecordTakesBackAFetch(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("c")}: {ConsumerByteRate: 1000}})
	if d := q.Fetch.Record(AnonymousUser, "c", 20_000, t0); d == 0 {
		t.Fatal("not throttled")
	}
	q.Fetch.Unrecord(AnonymousUser, "c", 20_000, t0)
	if d := q.Fetch.Record(AnonymousUser, "c", 10_000, t0); d != 0 {
		t.Fatalf("throttled %v after the unrecorded fetch", d)
	}
}

func TestMaxValueInWindow(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("c")}: {ConsumerByteRate: 1000}})
	if got := q.Fetch.MaxValueInWindow(AnonymousUser, "c"); got != 10_000 {
		t.Fatalf("max in window %v, want 10000", got)
	}
	if got := q.Fetch.MaxValueInWindow(AnonymousUser, "x"); !math.IsInf(got, 1) {
		t.Fatalf("max in window without quota %v, want +Inf", got)
	}
}

func TestIdleRatesAreDropped(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: DefaultName}: {ProducerByteRate: 1000}})
	for i := range 100 {
		q.Produce.Record(AnonymousUser, string(rune('a'+i%26))+string(rune('a'+i/26)), 1, t0)
	}
	if n := q.Produce.sensorCount(); n != 100 {
		t.Fatalf("%d rates, want 100", n)
	}
	q.Produce.Record(AnonymousUser, "late", 1, at(11_000))
	if n := q.Produce.sensorCount(); n != 1 {
		t.Fatalf("%d rates after the window passed, want 1", n)
	}
}

// A greedy producer that waits out every throttle gets close to its quota
// over a long run, after the first window's burst.
func TestGreedyProducerSettlesAtTheQuota(t *testing.T) {
	q := newTestQuotas(Limits{{ClientID: Of("p")}: {ProducerByteRate: 1 << 20}})
	const batch = 256 << 10
	now := int64(0)
	var sent float64
	for now < 60_000 {
		d := q.Produce.Record(AnonymousUser, "p", batch, at(now))
		sent += batch
		now += 5 + d.Milliseconds() // 5 ms per request, then the throttle
	}
	got := sent / (float64(now) / 1000) / (1 << 20)
	if got < 0.9 || got > 1.2 {
		t.Fatalf("greedy producer got %.3f of its quota over %d ms", got, now)
	}
	t.Logf("greedy producer: %.3f of its quota over %d ms", got, now)
}

package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsCoverEveryValueOnce(t *testing.T) {
	// Every value lies in [bucketLow, bucketHigh] of its bucket, and the
	// buckets follow each other without gaps.
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, 1<<20 + 12345, math.MaxInt64 / 3} {
		b := bucketOf(v)
		if lo, hi := bucketLow(b), bucketHigh(b); v < lo || v > hi {
			t.Errorf("value %d in bucket %d = [%d, %d]", v, b, lo, hi)
		}
	}
	for b := 0; b < 40<<subBits; b++ {
		if bucketLow(b+1) != bucketHigh(b)+1 {
			t.Fatalf("gap after bucket %d: high %d, next low %d", b, bucketHigh(b), bucketLow(b+1))
		}
		if bucketOf(bucketLow(b)) != b {
			t.Fatalf("bucketOf(bucketLow(%d)) = %d", b, bucketOf(bucketLow(b)))
		}
	}
}

func TestHistogramQuantilesWithinBucketPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var h histogram
	var exact []int64
	for range 100000 {
		// Log-uniform from 1 µs to ~1 s, as latencies spread.
		us := int64(math.Exp(r.Float64() * math.Log(1e6)))
		exact = append(exact, us)
		h.record(time.Duration(us) * time.Microsecond)
	}
	slices.Sort(exact)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := float64(exact[int(math.Ceil(q*float64(len(exact))))-1])
		got := float64(h.quantile(q).Microseconds())
		if rel := math.Abs(got-want) / want; rel > 1.0/(1<<subBits) {
			t.Errorf("q%v = %v µs, exact %v µs (off by %.2f%%)", q, got, want, 100*rel)
		}
	}
	if h.count() != 100000 {
		t.Errorf("count = %d", h.count())
	}
}

func TestHistogramSmallCountsAndMerge(t *testing.T) {
	var a, b histogram
	if a.quantile(0.5) != 0 {
		t.Errorf("empty histogram p50 = %v, want 0", a.quantile(0.5))
	}
	for _, ms := range []int{1, 2, 3, 4} {
		a.record(time.Duration(ms) * time.Millisecond)
	}
	b.record(100 * time.Millisecond)
	a.merge(&b)
	// Five samples: p50 is the 3rd (3 ms), p99 the 5th (100 ms).
	if got := a.quantile(0.5); math.Abs(ms(got)-3) > 3.0/(1<<subBits) {
		t.Errorf("p50 = %v, want ~3ms", got)
	}
	if got := a.quantile(0.99); got != 100*time.Millisecond {
		t.Errorf("p99 = %v, want the maximum, 100ms", got)
	}
	if a.count() != 5 {
		t.Errorf("count = %d", a.count())
	}
	// Negative durations (a clock that is not monotonic) count as 0.
	var c histogram
	c.record(-time.Second)
	if c.quantile(1) != 0 {
		t.Errorf("negative sample: p100 = %v", c.quantile(1))
	}
}

func TestMedianSpreadRatio(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		med  float64
		sp   spread
		name string
	}{
		{[]float64{3, 1, 2}, 2, spread{1, 3, 1}, "odd"},
		{[]float64{4, 1, 3, 2}, 2.5, spread{1, 4, 1.2}, "even"},
		{[]float64{5}, 5, spread{5, 5, 0}, "one"},
	} {
		if got := median(tc.xs); got != tc.med {
			t.Errorf("%s: median = %v, want %v", tc.name, got, tc.med)
		}
		if got := spreadOf(tc.xs); got != tc.sp {
			t.Errorf("%s: spread = %+v, want %+v", tc.name, got, tc.sp)
		}
	}
	if !math.IsNaN(median(nil)) || !math.IsNaN(spreadOf(nil).Rel) {
		t.Error("no rounds should give NaN")
	}
	if !math.IsNaN(spreadOf([]float64{0, 0}).Rel) {
		t.Error("a zero median has no relative spread")
	}
	if ratio(6, 3) != 2 || !math.IsNaN(ratio(1, 0)) || !math.IsNaN(ratio(math.NaN(), 1)) {
		t.Error("ratio")
	}
}

func TestSummarizeTakesMediansPerSystem(t *testing.T) {
	rounds := []roundResult{
		{System: "gokafka", Round: 1, Metrics: []metric{{"MB/s", "MB/s", 10, true}}},
		{System: "kfake", Round: 1, Metrics: []metric{{"MB/s", "MB/s", 20, true}}},
		{System: "gokafka", Round: 2, Metrics: []metric{{"MB/s", "MB/s", 30, true}}},
		{System: "kfake", Round: 2, Err: "boom"},
		{System: "gokafka", Round: 3, Metrics: []metric{{"MB/s", "MB/s", 20, true}}},
		{System: "kfake", Round: 3, Metrics: []metric{{"MB/s", "MB/s", 40, true}}},
	}
	rows := summarize(rounds, []string{"gokafka", "kfake"})
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.Median["gokafka"] != 20 || r.Median["kfake"] != 30 || r.Ratio != 20.0/30 {
		t.Errorf("row = %+v", r)
	}
	if r.Spread["gokafka"] != (spread{10, 30, 1}) {
		t.Errorf("gokafka spread = %+v", r.Spread["gokafka"])
	}
}

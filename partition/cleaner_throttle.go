package partition

import (
	"math"
	"sync"
	"time"
)

// throttler bounds the cleaner's I/O to log.cleaner.io.max.bytes.per.second
// across all cleaner threads (Kafka's Throttler): after each read or
// write, a thread sleeps for as long as the bytes moved since the window
// started are ahead of the rate.
type throttler struct {
	rate  float64 // bytes per second; +Inf or <= 0 for none
	mu    sync.Mutex
	start time.Time
	bytes float64
	sleep func(time.Duration)
}

func newThrottler(rate float64) *throttler {
	return &throttler{rate: rate, start: time.Now(), sleep: time.Sleep}
}

func (t *throttler) wait(n int) {
	if t == nil || t.rate <= 0 || math.IsInf(t.rate, 1) || t.rate >= math.MaxFloat64 {
		return
	}
	t.mu.Lock()
	now := time.Now()
	elapsed := now.Sub(t.start)
	if elapsed > time.Second {
		t.start, t.bytes, elapsed = now, 0, 0
	}
	t.bytes += float64(n)
	ahead := time.Duration(t.bytes/t.rate*float64(time.Second)) - elapsed
	t.mu.Unlock()
	if ahead > 0 {
		t.sleep(ahead)
	}
}

package quota

import "time"

// Config is the windowing of every quota rate.
type Config struct {
	// WindowNum is quota.window.num: how many samples a rate keeps.
	WindowNum int
	// WindowSize is quota.window.size.seconds: the span of one sample.
	WindowSize time.Duration
}

// DefaultConfig returns Kafka's defaults: 11 samples of one second.
func DefaultConfig() Config { return Config{WindowNum: 11, WindowSize: time.Second} }

// valid is c with Kafka's defaults in place of unset or unusable values.
func (c Config) valid() Config {
	def := DefaultConfig()
	if c.WindowNum < 1 {
		c.WindowNum = def.WindowNum
	}
	if c.WindowSize < time.Millisecond {
		c.WindowSize = def.WindowSize
	}
	return c
}

func (c Config) windowMs() int64 { return c.WindowSize.Milliseconds() }

// sample is one window of a rate: what was recorded since start (ms).
type sample struct {
	start int64
	value float64
}

// rate is Kafka's Rate over a WindowedSum: the sum of the recorded values
// over the retained samples, divided by the span they cover. A new sample
// starts when the current one is a window old (samples are not aligned
// to the clock); a sample older than all windows together is reset
// before it is read. While fewer than WindowNum-1 windows have passed the
// span is padded to WindowNum-1 windows, so the first burst after a quiet
// period is measured against most of the window rather than against the
// few milliseconds it took.
//
// Invariant: len(samples) <= WindowNum and 0 <= current < len(samples)
// once anything was recorded.
type rate struct {
	samples []sample
	current int
}

// record adds v at now (ms).
func (r *rate) record(cfg Config, v float64, now int64) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
		r.current = 0
	}
	if now-r.samples[r.current].start >= cfg.windowMs() {
		r.current = (r.current + 1) % cfg.WindowNum
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.current] = sample{start: now}
		}
	}
	r.samples[r.current].value += v
}

// purge resets the samples that no window covers any more.
func (r *rate) purge(cfg Config, now int64) {
	expire := int64(cfg.WindowNum) * cfg.windowMs()
	for i := range r.samples {
		if now-r.samples[i].start >= expire {
			r.samples[i] = sample{start: now}
		}
	}
}

// windowSize is the span (ms) the rate divides by at now.
func (r *rate) windowSize(cfg Config, now int64) int64 {
	r.purge(cfg, now)
	oldest := now
	if len(r.samples) > 0 {
		oldest = r.samples[0].start
		for _, s := range r.samples[1:] {
			oldest = min(oldest, s.start)
		}
	}
	elapsed := now - oldest
	full := elapsed / cfg.windowMs()
	if minFull := int64(cfg.WindowNum - 1); full < minFull {
		elapsed += (minFull - full) * cfg.windowMs()
	}
	return elapsed
}

// measure is the rate per second at now.
func (r *rate) measure(cfg Config, now int64) float64 {
	r.purge(cfg, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	w := r.windowSize(cfg, now)
	if w <= 0 {
		return 0
	}
	return sum / (float64(w) / 1000)
}

// newest is the start of the latest sample (ms), or -1 when empty.
func (r *rate) newest() int64 {
	if len(r.samples) == 0 {
		return -1
	}
	return r.samples[r.current].start
}

// throttleTime is how long (ms) nothing more may be recorded for an
// observed rate to fall back to bound over a window of windowMs, as
// Kafka's QuotaUtils.throttleTime computes it: if O is observed over W,
// then O*W/(W+X) = T gives X = (O-T)/T*W.
func throttleTime(observed, bound float64, windowMs int64) int64 {
	if observed <= bound {
		return 0
	}
	if bound <= 0 {
		return maxThrottleMs
	}
	x := (observed - bound) / bound * float64(windowMs)
	if x >= maxThrottleMs {
		return maxThrottleMs
	}
	return int64(x + 0.5)
}

// maxThrottleMs is the largest throttle the protocol can carry.
const maxThrottleMs = 1<<31 - 1

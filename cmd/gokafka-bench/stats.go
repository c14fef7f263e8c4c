package main

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// histogram is a log-linear latency histogram over microseconds: values
// below 2^subBits µs each have their own bucket, and every power of two
// above is cut into 2^subBits equal buckets, so a reported percentile is
// within 1/2^subBits (about 1.6 %) of the true value whatever its size.
// Recording is O(1) and the memory is fixed, so a run can record every
// record's latency.
type histogram struct {
	counts [64 << subBits]uint64
	n      uint64
	max    int64 // µs
}

const subBits = 6

func bucketOf(us int64) int {
	if us < 0 {
		us = 0
	}
	v := uint64(us)
	if v < 1<<subBits {
		return int(v)
	}
	exp := bits.Len64(v) - subBits // ≥ 1
	sub := v >> (exp - 1) & (1<<subBits - 1)
	return exp<<subBits | int(sub)
}

// bucketLow is the smallest value that falls in bucket b.
func bucketLow(b int) int64 {
	if b < 1<<subBits {
		return int64(b)
	}
	exp := b >> subBits
	sub := uint64(b & (1<<subBits - 1))
	return int64((1<<subBits | sub) << (exp - 1))
}

// bucketHigh is the largest value that falls in bucket b.
func bucketHigh(b int) int64 {
	if b+1 >= len(histogram{}.counts) {
		return math.MaxInt64
	}
	return bucketLow(b+1) - 1
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	h.counts[bucketOf(us)]++
	h.n++
	if us > h.max {
		h.max = us
	}
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

func (h *histogram) count() uint64 { return h.n }

// quantile returns the value at quantile q (0 < q ≤ 1): the midpoint of the
// bucket holding the ⌈q·n⌉-th smallest sample, capped by the largest
// sample seen, or that largest sample itself when the rank is the last.
// It returns 0 for an empty histogram.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return time.Duration(h.max) * time.Microsecond
	}
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketLow(b), bucketHigh(b)
			mid := lo + (hi-lo)/2
			return time.Duration(min(mid, h.max)) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// syncHistogram is a histogram fed from client callbacks on many goroutines.
type syncHistogram struct {
	mu sync.Mutex
	h  histogram
}

func (s *syncHistogram) record(d time.Duration) {
	s.mu.Lock()
	s.h.record(d)
	s.mu.Unlock()
}

func (s *syncHistogram) snapshot() *histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.h
	return &c
}

// median of xs (the mean of the middle two for an even count); NaN if empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spread describes how far the rounds of one metric lie apart.
type spread struct {
	Min, Max float64
	// Rel is (max−min)/median: 0.1 means the rounds span 10 % of the
	// median. NaN when the median is 0 or there are no rounds.
	Rel float64
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	s := spread{Min: slices.Min(xs), Max: slices.Max(xs)}
	if m := median(xs); m != 0 {
		s.Rel = (s.Max - s.Min) / math.Abs(m)
	} else {
		s.Rel = math.NaN()
	}
	return s
}

// ratio is a/b, NaN when b is 0 or either is NaN.
func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

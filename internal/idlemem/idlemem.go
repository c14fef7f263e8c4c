// Package idlemem returns the heap an idle process no longer uses to the
// operating system, as the JVM's G1 does with its periodic collection
// (JEP 346).
//
// Go's collector lets the heap grow to twice what was live after the last
// collection before it collects again, and its scavenger returns only the
// free memory above about 10 % over that goal. After a burst (creating
// thousands of partitions, a batch of large requests) a broker that then
// goes idle keeps the burst's free heap resident: with little allocated,
// the next collection comes only from the runtime's forced one every two
// minutes, and even that leaves the memory under the new goal retained.
//
// A Releaser looks at runtime/metrics every interval (no stop-the-world)
// and, only when the heap it could give back (free, or garbage the next
// collection would free) is large and the process allocated little since
// the previous look, calls debug.FreeOSMemory once:
// a collection, then every free page returned. A busy process allocates
// much more than its free heap per interval and is left alone; an idle one
// with little free heap is too.
package idlemem

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DefaultMinRelease is the free heap below which nothing is released: a
// collection to give back a few megabytes is not worth its CPU.
const DefaultMinRelease = 8 << 20

// Config says how often the heap is looked at and how much must be free.
type Config struct {
	// Interval between looks; zero or less turns the releaser off.
	Interval time.Duration
	// MinRelease is the free heap, in bytes, that makes a release worth
	// it (DefaultMinRelease when zero).
	MinRelease uint64
}

const (
	metricFree     = "/memory/classes/heap/free:bytes"
	metricReleased = "/memory/classes/heap/released:bytes"
	metricAllocs   = "/gc/heap/allocs:bytes"
	// objects is the heap in objects, garbage not yet collected included;
	// live is what the last collection found live.
	metricObjects = "/memory/classes/heap/objects:bytes"
	metricLive    = "/gc/heap/live:bytes"
)

// Releaser is the running loop; Stop ends it.
type Releaser struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start runs a releaser until ctx ends or Stop is called. With a zero
// interval it starts nothing (Stop is then a no-op).
func Start(ctx context.Context, cfg Config, log zerolog.Logger) *Releaser {
	r := &Releaser{done: make(chan struct{})}
	if cfg.Interval <= 0 {
		close(r.done)
		r.cancel = func() {}
		return r
	}
	if cfg.MinRelease == 0 {
		cfg.MinRelease = DefaultMinRelease
	}
	ctx, r.cancel = context.WithCancel(ctx)
	go r.run(ctx, cfg, log)
	return r
}

// Stop ends the loop and waits for it.
func (r *Releaser) Stop() {
	r.once.Do(r.cancel)
	<-r.done
}

func (r *Releaser) run(ctx context.Context, cfg Config, log zerolog.Logger) {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			log.Error().Interface("panic", p).Msg("idle memory releaser stopped by a panic")
		}
	}()
	samples := []metrics.Sample{{Name: metricFree}, {Name: metricReleased}, {Name: metricAllocs}, {Name: metricObjects}, {Name: metricLive}}
	metrics.Read(samples)
	lastAllocs := value(samples[2])
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		allocs := value(samples[2])
		allocated := allocs - lastAllocs
		lastAllocs = allocs
		// What a collection would leave free: the free heap, and the
		// garbage allocated since the last collection (after a burst
		// with little allocation since, the next collection is minutes
		// away and the burst's garbage still counts as in use).
		free := value(samples[0]) + value(samples[3]) - min(value(samples[4]), value(samples[3]))
		if !worthReleasing(free, allocated, cfg.MinRelease) {
			continue
		}
		released := value(samples[1])
		debug.FreeOSMemory()
		metrics.Read(samples)
		lastAllocs = value(samples[2])
		log.Debug().Uint64("reclaimable_bytes", free).Uint64("allocated_bytes", allocated).
			Uint64("returned_bytes", value(samples[1])-min(released, value(samples[1]))).
			Msg("idle: heap returned to the OS")
	}
}

// worthReleasing says whether free bytes of heap free or reclaimable, with
// allocated bytes allocated since the previous look, make a release worth
// its collection: enough to give back, and a process quiet enough that it
// will not take it back at once (it allocated less than a quarter of it
// meanwhile).
func worthReleasing(free, allocated, minRelease uint64) bool {
	return free >= minRelease && allocated < free/4
}

func value(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

package idlemem

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func readHeap() (free, released uint64) {
	s := []metrics.Sample{{Name: metricFree}, {Name: metricReleased}}
	metrics.Read(s)
	return value(s[0]), value(s[1])
}

var sink [][]byte

// After a burst of allocation that is then dropped, an idle process keeps
// the burst's pages: they are free heap under the collector's goal, which
// the scavenger leaves resident. The releaser gives them back.
func TestReleaserReturnsTheFreeHeapOfABurstOnceIdle(t *testing.T) {
	// Live heap that keeps the collector's goal high enough for the
	// scavenger to leave the burst's free pages alone.
	live := make([][]byte, 0, 24<<4)
	for range 24 << 4 {
		live = append(live, make([]byte, 64<<10))
	}
	sink = live
	// The burst: 16 MiB allocated and dropped.
	burst := make([][]byte, 0, 16<<4)
	for range 16 << 4 {
		burst = append(burst, make([]byte, 64<<10))
	}
	sink = append(sink[:len(live):len(live)], burst...)
	sink = live
	burst = nil
	runtime.GC()
	free, released := readHeap()
	t.Logf("after the burst: free heap %d MiB, released %d MiB", free>>20, released>>20)
	if free < 8<<20 {
		t.Skipf("the runtime returned the burst by itself (free heap %d bytes)", free)
	}

	r := Start(context.Background(), Config{Interval: 10 * time.Millisecond, MinRelease: 4 << 20}, zerolog.Nop())
	defer r.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nowFree, nowReleased := readHeap()
		if nowFree < free/2 && nowReleased >= released+(free-nowFree)/2 {
			t.Logf("released: free heap %d MiB, released %d MiB", nowFree>>20, nowReleased>>20)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("free heap still %d bytes (was %d), released %d (was %d): the idle heap was not returned", nowFree, free, nowReleased, released)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

// After a burst and no collection since (an idle process may go minutes
// without one), the burst is garbage that still counts as heap in use,
// not free: the releaser counts it as reclaimable, and its collection
// frees it and returns it.
func TestReleaserReturnsABurstsUncollectedGarbage(t *testing.T) {
	live := make([][]byte, 0, 24<<4)
	for range 24 << 4 {
		live = append(live, make([]byte, 64<<10))
	}
	sink = live
	runtime.GC()
	debug.FreeOSMemory()
	// 16 MiB of garbage, under the goal of twice the 24 MiB live: no
	// collection runs meanwhile.
	var garbage [][]byte
	for range 16 << 4 {
		garbage = append(garbage, make([]byte, 64<<10))
	}
	garbage = nil
	s := []metrics.Sample{{Name: metricObjects}, {Name: metricLive}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if value(s[0])-value(s[1]) < 12<<20 {
		t.Skipf("the burst was collected already (objects %d, live %d)", value(s[0]), value(s[1]))
	}
	cycles := value(s[2])
	_, released := readHeap()

	r := Start(context.Background(), Config{Interval: 10 * time.Millisecond, MinRelease: 4 << 20}, zerolog.Nop())
	defer r.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		metrics.Read(s)
		_, nowReleased := readHeap()
		if value(s[2]) > cycles && nowReleased >= released+8<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("released %d bytes (was %d), collections %d (was %d): the burst's garbage was neither collected nor returned", nowReleased, released, value(s[2]), cycles)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

// A busy process (allocating a large share of its free heap between two
// looks) or one with little free heap is left alone.
func TestReleaserLeavesBusyOrSmallHeapsAlone(t *testing.T) {
	for _, c := range []struct {
		free, allocated uint64
		want            bool
	}{
		{free: 32 << 20, allocated: 1 << 20, want: true},
		{free: 32 << 20, allocated: 16 << 20, want: false},
		{free: 4 << 20, allocated: 0, want: false},
		{free: DefaultMinRelease, allocated: 0, want: true},
	} {
		if got := worthReleasing(c.free, c.allocated, DefaultMinRelease); got != c.want {
			t.Errorf("free %d, allocated %d: release %v, want %v", c.free, c.allocated, got, c.want)
		}
	}
}

// With no interval nothing runs, and Stop returns.
func TestReleaserOffWithZeroInterval(t *testing.T) {
	r := Start(context.Background(), Config{}, zerolog.Nop())
	r.Stop()
	r.Stop()
}

// Stopping ends the loop, also when called twice.
func TestReleaserStops(t *testing.T) {
	r := Start(context.Background(), Config{Interval: time.Millisecond}, zerolog.Nop())
	r.Stop()
	r.Stop()
	select {
	case <-r.done:
	default:
		t.Fatal("loop still running after Stop")
	}
}

// What one look costs when nothing is released (every interval, 10 s by
// default): reading five runtime metrics.
func BenchmarkLook(b *testing.B) {
	samples := []metrics.Sample{{Name: metricFree}, {Name: metricReleased}, {Name: metricAllocs}, {Name: metricObjects}, {Name: metricLive}}
	for b.Loop() {
		metrics.Read(samples)
		free := value(samples[0]) + value(samples[3]) - min(value(samples[4]), value(samples[3]))
		_ = worthReleasing(free, value(samples[2]), DefaultMinRelease)
	}
}

package partition

import (
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"
)

// benchCompactedLog writes n records over keys keys, 100 records a batch
// with 100-byte values, to a compacted log on disk, all committed.
func benchCompactedLog(b *testing.B, n, keys int) *Log {
	cfg := compactConfig()
	cfg.SegmentBytes = 8 << 20
	cfg.IndexIntervalBytes = 4096
	l, err := Open(OSFS(), b.TempDir(), TopicPartition{Topic: "bench", Partition: 0}, cfg, testLogger(b), OpenOptions{CleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	ts := time.Now().UnixMilli() - 60_000
	val := make([]byte, 100)
	for i := 0; i < n; i += 100 {
		bb := NewBatchBuilder(ts)
		for j := i; j < i+100 && j < n; j++ {
			bb.Add(Record{Key: []byte(fmt.Sprintf("key-%07d", j%keys)), Value: val})
		}
		if _, err := l.Append(bb.Build(), 0); err != nil {
			b.Fatal(err)
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	return l
}

// BenchmarkCleaner cleans a 1M-record log (about 130 MB) over 100k keys
// once per iteration: MB/s is of the log read, and the key map's memory
// is reported as map-MB (log.cleaner.dedupe.buffer.size bounds it).
func BenchmarkCleaner(b *testing.B) {
	const n, keys = 1_000_000, 100_000
	mapBytes := int64(keys) * offsetMapSlot * 2
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := benchCompactedLog(b, n, keys)
		size := l.Size()
		run := &cleanRun{m: newOffsetMap(mapBytes, 0.9), now: time.Now}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		st, err := l.clean(run, -1, true)
		b.StopTimer()
		runtime.ReadMemStats(&after)
		if err != nil || st.Passes == 0 {
			b.Fatalf("clean: %+v %v", st, err)
		}
		b.SetBytes(size)
		b.ReportMetric(float64(len(run.m.slots))/(1<<20), "map-MB")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20)/float64(1), "alloc-MB/clean")
		b.ReportMetric(float64(size)/(1<<20), "log-MB")
		b.ReportMetric(float64(st.SizeAfter)/(1<<20), "log-after-MB")
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkAppendWhileCleaning measures the p99 latency of appends to one
// log while another is being cleaned (cleaning must not stall producers),
// against the same appends with no cleaning.
func BenchmarkAppendWhileCleaning(b *testing.B) {
	for _, cleaning := range []bool{false, true} {
		b.Run(fmt.Sprintf("cleaning=%v", cleaning), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dirty := benchCompactedLog(b, 500_000, 50_000)
				other := benchLog(b)
				batch := bench16K(b)
				done := make(chan struct{})
				b.StartTimer()
				if cleaning {
					go func() {
						defer close(done)
						run := &cleanRun{m: newOffsetMap(8<<20, 0.9), now: time.Now}
						if _, err := dirty.clean(run, -1, true); err != nil {
							b.Error(err)
						}
					}()
				} else {
					go func() {
						time.Sleep(time.Second)
						close(done)
					}()
				}
				var lat []time.Duration
			loop:
				for {
					select {
					case <-done:
						break loop
					default:
					}
					t0 := time.Now()
					if _, err := other.Append(batch, 1); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
					time.Sleep(200 * time.Microsecond)
				}
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
				}
				dirty.Close()
				other.Close()
				b.StartTimer()
			}
		})
	}
}

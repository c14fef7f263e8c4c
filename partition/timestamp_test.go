package partition

import (
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

func TestOffsetForTimestamp(t *testing.T) {
	for _, codec := range []int8{CompressionNone, CompressionGzip, CompressionZstd} {
		t.Run([]string{"none", "gzip", "", "", "zstd"}[codec], func(t *testing.T) {
			fs := NewMemFS()
			cfg := smallConfig()
			cfg.SegmentBytes = 600
			l := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
			defer l.Close()
			if _, _, _, ok, _ := l.OffsetForTimestamp(-3); ok {
				t.Fatal("max timestamp of empty log")
			}
			// 8 batches of 4 records; batch i has timestamps 1000+100i+{0,30,10,20}
			// (non-monotonic inside a batch); batch 5 holds the overall max 10499.
			for i := 0; i < 8; i++ {
				base := int64(1000 + 100*i)
				d := []int64{0, 30, 10, 20}
				if i == 5 {
					d = []int64{0, 8999, 5, 8999}
				}
				mustAppend(t, l, testkit.Batch{FirstTimestamp: base, TimestampDeltas: d, ValueLen: 30, Codec: codec}.Encode(t), int32(i))
			}
			if l.NumSegments() < 2 {
				t.Fatalf("want several segments, have %d", l.NumSegments())
			}
			cases := []struct {
				ts, off, gotTs int64
				ok             bool
			}{
				{0, 0, 1000, true},
				{1000, 0, 1000, true},
				{1001, 1, 1030, true},   // first record >= 1001 is the second one
				{1015, 1, 1030, true},   // 1030 comes before 1010 in offset order
				{1031, 4, 1100, true},   // next batch
				{1325, 13, 1330, true},  // within batch 3
				{1501, 21, 10499, true}, // batch 5, second record
				{1600, 21, 10499, true}, // the max record precedes batch 6 in offset order
				{10500, 0, 0, false},    // beyond every timestamp
			}
			for _, c := range cases {
				off, ts, ep, ok, err := l.OffsetForTimestamp(c.ts)
				if err != nil || ok != c.ok || (ok && (off != c.off || ts != c.gotTs)) {
					t.Errorf("ts %d: got %d %d %v %v, want %d %d %v", c.ts, off, ts, ok, err, c.off, c.gotTs, c.ok)
				}
				if ok && ep != int32(off/4) {
					t.Errorf("ts %d: epoch %d want %d", c.ts, ep, off/4)
				}
			}
			if off, ts, ep, ok, _ := l.OffsetForTimestamp(-1); !ok || off != 32 || ts != -1 || ep != 7 {
				t.Errorf("latest: %d %d %d", off, ts, ep)
			}
			if off, _, ep, ok, _ := l.OffsetForTimestamp(-2); !ok || off != 0 || ep != 0 {
				t.Errorf("earliest: %d %d", off, ep)
			}
			if off, ts, ep, ok, _ := l.OffsetForTimestamp(-3); !ok || off != 21 || ts != 10499 || ep != 5 {
				t.Errorf("max timestamp: %d %d %d %v", off, ts, ep, ok)
			}
			// Reopen: the time index and max timestamps come back from disk.
			l.Close()
			l2 := openTestLog(t, fs, cfg, OpenOptions{CleanShutdown: true})
			defer l2.Close()
			if off, ts, _, ok, _ := l2.OffsetForTimestamp(-3); !ok || off != 21 || ts != 10499 {
				t.Errorf("max timestamp after reopen: %d %d", off, ts)
			}
			if off, _, _, ok, _ := l2.OffsetForTimestamp(1325); !ok || off != 13 {
				t.Errorf("after reopen: %d", off)
			}
		})
	}
}

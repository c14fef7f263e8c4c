package partition

import (
	"bytes"
	"math"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// ReadRegion must return exactly the batches Read returns, for every
// start offset, byte limit and offset bound, whether as bytes or as a
// file region, and the same next offset.
func TestReadRegionMatchesRead(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 30
	l, err := Open(OSFS(), t.TempDir(), TopicPartition{Topic: "r", Partition: 0}, cfg, testLogger(t), OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Small batches, then batches larger than one scan window, then
	// small again: ranges cross the window in every way.
	sizes := []int{1, 3, 40, 60, 2, 90, 1, 1, 70, 5}
	for i, n := range sizes {
		mustAppend(t, l, testkit.SimpleBatch(n, int64(i), 1000), 1)
	}
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	regions := 0
	for _, off := range []int64{0, 1, 4, 44, 104, 106, 196, leo - 1} {
		for _, maxBytes := range []int32{0, 100, 5000, 40_000, 100_000, 1 << 20} {
			for _, maxOffset := range []int64{off + 1, 105, leo, math.MaxInt64} {
				for _, minOne := range []bool{false, true} {
					want, err := l.Read(off, maxBytes, maxOffset, minOne)
					if err != nil {
						t.Fatal(err)
					}
					got, err := l.ReadRegion(off, maxBytes, maxOffset, minOne)
					if err != nil {
						t.Fatal(err)
					}
					b := got.Records
					if got.Region != nil {
						regions++
						b = make([]byte, got.Region.Len)
						if _, err := got.Region.File.ReadAt(b, got.Region.Pos); err != nil {
							t.Fatal(err)
						}
						got.Region.Close()
					}
					if !bytes.Equal(b, want.Records) || got.NextOffset != want.NextOffset || got.Size() != want.Size() {
						t.Fatalf("offset %d maxBytes %d maxOffset %d minOne %v: region read %d bytes next %d, read %d bytes next %d",
							off, maxBytes, maxOffset, minOne, len(b), got.NextOffset, len(want.Records), want.NextOffset)
					}
				}
			}
		}
	}
	if regions == 0 {
		t.Fatal("no read came back as a file region")
	}
}

// A region stays readable after its segment is deleted.
func TestRegionOutlivesSegment(t *testing.T) {
	l, err := Open(OSFS(), t.TempDir(), TopicPartition{Topic: "r", Partition: 1}, smallConfig(), testLogger(t), OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	b := testkit.SimpleBatch(100, 1, 1000)
	mustAppend(t, l, b, 1)
	l.SetHighWatermark(l.LogEndOffset())
	ri, err := l.ReadRegion(0, 1<<20, math.MaxInt64, true)
	if err != nil || ri.Region == nil {
		t.Fatalf("want a region, got %+v, %v", ri, err)
	}
	defer ri.Region.Close()
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, ri.Region.Len)
	if _, err := ri.Region.File.ReadAt(got, ri.Region.Pos); err != nil {
		t.Fatal(err)
	}
	if ri.Region.Len != int64(len(b)) || !bytes.Equal(got[12:], b[12:]) || ri.NextOffset != 100 {
		t.Fatalf("region after delete: %d bytes, next %d", len(got), ri.NextOffset)
	}
}

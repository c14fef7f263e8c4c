package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestListOffsetsByTime checks ListOffsets with a timestamp: the answer is
// the first offset whose record timestamp is >= the requested one, whether
// the timestamp falls on a record, between records, inside a batch or at a
// batch boundary; with no such record it is the end offset.
func TestListOffsetsByTime(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	topic := "list-offsets-time"
	createTopic(t, adm, topic, 2, nil) // partition 1 stays empty

	const n = 100
	const step = 10 // ms between consecutive records
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	tsOf := func(i int) int64 { return t0 + int64(i)*step }

	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := testCtx(t, time.Minute)
	// Ten synchronous calls of ten records: several batches, several records
	// per batch, so lookups land both on batch boundaries and inside batches.
	for batch := 0; batch < n/10; batch++ {
		var rs []*kgo.Record
		for i := batch * 10; i < batch*10+10; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: time.UnixMilli(tsOf(i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	type query struct {
		ts         int64
		wantOffset int64
		wantTs     int64 // -1: not checked (end offset answers)
	}
	qs := []query{
		{t0 - 60_000, 0, tsOf(0)},
		{t0, 0, tsOf(0)},
		{t0 + 1, 1, tsOf(1)},
		{tsOf(9), 9, tsOf(9)},       // last record of the first batch
		{tsOf(9) + 1, 10, tsOf(10)}, // falls between batches
		{tsOf(10), 10, tsOf(10)},
		{tsOf(55) - 3, 55, tsOf(55)},
		{tsOf(99), 99, tsOf(99)},
		{tsOf(99) + 1, n, -1}, // after every record: the end offset
	}
	check := func(phase string) {
		t.Helper()
		for _, q := range qs {
			lo, err := adm.ListOffsetsAfterMilli(ctx, q.ts, topic)
			if err != nil {
				t.Fatalf("%s: ListOffsetsAfterMilli(%d): %v", phase, q.ts, err)
			}
			o, ok := lo.Lookup(topic, 0)
			if !ok {
				t.Fatalf("%s: ListOffsetsAfterMilli(%d): partition 0 missing from %v", phase, q.ts, lo)
			}
			if o.Err != nil {
				t.Errorf("%s: ListOffsetsAfterMilli(t0%+d): error %v", phase, q.ts-t0, o.Err)
				continue
			}
			if o.Offset != q.wantOffset {
				t.Errorf("%s: ListOffsetsAfterMilli(t0%+d) = offset %d, want %d", phase, q.ts-t0, o.Offset, q.wantOffset)
			}
			if q.wantTs >= 0 && o.Timestamp != q.wantTs {
				t.Errorf("%s: ListOffsetsAfterMilli(t0%+d) = timestamp %d, want %d (the found record's)", phase, q.ts-t0, o.Timestamp, q.wantTs)
			}
			if e, ok := lo.Lookup(topic, 1); !ok || e.Err != nil || e.Offset != 0 {
				t.Errorf("%s: ListOffsetsAfterMilli(t0%+d) on the empty partition = %+v, want offset 0", phase, q.ts-t0, e)
			}
		}

		// ListOffsets timestamp -3 (KIP-734): the record with the largest
		// timestamp, which here is the last one.
		mt, err := adm.ListMaxTimestampOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("%s: ListOffsets max timestamp: %v", phase, err)
		}
		if o, ok := mt.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != n-1 || o.Timestamp != tsOf(n-1) {
			t.Errorf("%s: ListOffsets max timestamp = %+v, want offset %d timestamp %d", phase, o, n-1, tsOf(n-1))
		}

		starts, ends := startOffsets(t, adm, topic), endOffsets(t, adm, topic)
		if starts[0] != 0 || ends[0] != n || starts[1] != 0 || ends[1] != 0 {
			t.Errorf("%s: start offsets %v, end offsets %v; want {0:0 1:0} and {0:%d 1:0}", phase, starts, ends, n)
		}
	}
	check("before restart")

	// The time index must come back after a crash, whether it was flushed
	// or rebuilt from the log.
	b.Kill()
	b.Restart()
	check("after kill -9 and restart")

	// kgo resolves AfterMilli with the same ListOffsets request and starts
	// consuming there.
	for _, k := range []int{0, 37, 99} {
		got := consumeKgoFrom(t, b, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AfterMilli(tsOf(k) - 3)}, 1)
		if got[0].Offset != int64(k) || string(got[0].Value) != fmt.Sprint(k) || got[0].Timestamp != tsOf(k) {
			t.Errorf("kgo consuming after t0+%dms: first record %v, want offset %d", tsOf(k)-3-t0, got[0], k)
		}
	}
}

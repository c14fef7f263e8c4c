package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentRetries drives an idempotent producer by hand: a retried
// batch (same producer id, epoch and sequence) is answered with success and
// its original base offset instead of being appended again, also after a
// restart; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestIdempotentRetries(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "idempotent-raw"
	createTopic(t, b.admin(t), topic, 1, nil)

	rc := dialRaw(t, b)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(1)
	init.TransactionTimeoutMillis = 60000
	ir := rc.roundTrip(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 || ir.ProducerID < 0 {
		t.Fatalf("InitProducerId: error %d, producer id %d", ir.ErrorCode, ir.ProducerID)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	ts := time.Now().UnixMilli()
	batch := func(firstSeq int32) []byte {
		vals := make([][]byte, 3)
		for i := range vals {
			vals[i] = []byte(fmt.Sprintf("seq-%d", firstSeq+int32(i)))
		}
		return buildProducerBatch(vals, ts, pid, epoch, firstSeq)
	}
	produce := func(rc *rawConn, desc string, firstSeq int32, wantCode int16, wantBase int64) {
		t.Helper()
		p := producePartitionResult(t, rc.roundTrip(produceRequest(9, -1, topic, 0, batch(firstSeq))))
		if p.ErrorCode != wantCode || (wantCode == 0 && p.BaseOffset != wantBase) {
			t.Errorf("%s (first sequence %d): error %d base offset %d, want error %d base offset %d",
				desc, firstSeq, p.ErrorCode, p.BaseOffset, wantCode, wantBase)
		}
	}

	produce(rc, "first batch", 0, 0, 0)
	produce(rc, "retry of the first batch", 0, 0, 0)
	produce(rc, "second batch", 3, 0, 3)
	produce(rc, "retry of the second batch", 3, 0, 3)
	produce(rc, "late retry of the first batch", 0, 0, 0)
	produce(rc, "sequence gap", 10, kerr.OutOfOrderSequenceNumber.Code, 0)

	b.Restart()
	rc2 := dialRaw(t, b)
	produce(rc2, "retry of the second batch after restart", 3, 0, 3)
	produce(rc2, "next batch after restart", 6, 0, 6)

	got := consumeKgo(t, b, topic, []int32{0}, 9)
	for i, r := range got {
		if want := fmt.Sprintf("seq-%d", i); r.Offset != int64(i) || string(r.Value) != want {
			t.Errorf("record %d: %v, want offset %d value %q", i, r, i, want)
		}
	}
	if ends := endOffsets(t, b.admin(t), topic); ends[0] != 9 {
		t.Errorf("end offset %d, want 9: retried batches must not be appended again", ends[0])
	}
}

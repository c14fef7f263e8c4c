package integration

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAcksZero: acks=0 writes land and are readable, and the broker sends no
// response to them (a stray response would shift every later correlation id
// on the connection).
func TestAcksZero(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)

	t.Run("kgo", func(t *testing.T) {
		topic := "acks-zero"
		createTopic(t, adm, topic, 3, nil)
		cl := b.client(t,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.NoAck()),
			kgo.DisableIdempotentWrite(),
			// One request at a time keeps per-partition order without acks.
			kgo.MaxProduceRequestsInflightPerBroker(1),
		)
		sent := genRecords(3000, 3, 900)
		ctx := testCtx(t, time.Minute)
		for start := 0; start < len(sent); start += 500 {
			var rs []*kgo.Record
			for _, r := range sent[start:min(start+500, len(sent))] {
				rs = append(rs, toKgo(topic, r))
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatalf("acks=0 produce: %v", err)
			}
		}
		// Nothing is acknowledged, so wait for the data to be visible.
		eventually(t, time.Minute, func() error {
			lo, err := tryListed(topic, endOffsetsFn(adm, topic))
			if err != nil {
				return err
			}
			return equalCounts(lo, countPerPartition(sent))
		})
		got := consumeKgo(t, b, topic, partitionList(3), len(sent))
		checkRecords(t, sent, got)
	})

	t.Run("raw-no-response", func(t *testing.T) {
		topic := "acks-zero-raw"
		createTopic(t, adm, topic, 1, nil)
		rc := dialRaw(t, b)
		ts := time.Now().UnixMilli()
		values := [][]byte{[]byte("fire"), []byte("and"), []byte("forget")}
		rc.send(produceRequest(9, 0, topic, 0, buildBatch(values, ts)))
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(1)
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
		// readResponse fails if the next frame is not the Metadata response.
		resp := rc.roundTrip(meta).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Errorf("metadata after acks=0 produce: %+v", resp.Topics)
		}
		got := consumeKgo(t, b, topic, []int32{0}, 3)
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, values[i]) {
				t.Errorf("record %d: %v, want offset %d value %q", i, r, i, values[i])
			}
		}
	})
}

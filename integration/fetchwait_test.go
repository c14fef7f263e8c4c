package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchWaitsForData: a Fetch with MinBytes=1 and a long MaxWait on an
// empty partition is parked, not answered empty, and a record produced
// meanwhile comes back in its response.
func TestFetchWaitsForData(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "fetch-wait"
	createTopic(t, b.admin(t), topic, 1, nil)

	rc := dialRaw(t, b)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis = 10000 // far longer than the produce below takes
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1 // no fetch session
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 0
	fp.FetchOffset = 0
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	corr := rc.send(req)

	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	time.Sleep(200 * time.Millisecond) // let the fetch park first; passing does not depend on it
	ctx := testCtx(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	resp := kmsg.NewPtrFetchResponse()
	rc.readResponse(req, corr, resp)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch v11: error %d, topics %+v", resp.ErrorCode, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("parked Fetch answered with error %d, high watermark %d, %d bytes of batches; want the produced record",
			p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(p.RecordBatches); err != nil {
		t.Fatalf("decoding fetched batch: %v", err)
	}
	if vals := decodeValues(t, rb); len(vals) != 1 || vals[0] != "wake up" {
		t.Errorf("fetched values %q, want [\"wake up\"]", vals)
	}
}

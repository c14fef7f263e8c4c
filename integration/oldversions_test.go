package integration

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOldProtocolVersions speaks, byte for byte, the fixed old versions that
// clients still in use send without negotiating (kafka-python 2.0.2: Produce
// v7, Fetch v4, ListOffsets v1, Metadata v1), plus Produce v3 (the first with
// v2 record batches) and ListOffsets v0 with its old-style offset list, and
// decodes the old response shapes.
func TestOldProtocolVersions(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "old-versions"
	createTopic(t, b.admin(t), topic, 1, nil)
	rc := dialRaw(t, b)
	ts := time.Now().UnixMilli()
	vals := func(from int) [][]byte {
		return [][]byte{[]byte(fmt.Sprint("v", from)), []byte(fmt.Sprint("v", from+1)), []byte(fmt.Sprint("v", from+2))}
	}

	for i, version := range []int16{3, 7} {
		p := producePartitionResult(t, rc.roundTrip(produceRequest(version, 1, topic, 0, buildBatch(vals(3*i), ts))))
		if p.ErrorCode != 0 || p.BaseOffset != int64(3*i) {
			t.Errorf("Produce v%d: error %d base offset %d, want 0 and %d", version, p.ErrorCode, p.BaseOffset, 3*i)
		}
	}

	t.Run("metadata-v1", func(t *testing.T) {
		rc := dialRaw(t, b)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(1)
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
		resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].Port != int32(b.port) {
			t.Errorf("Metadata v1 brokers %+v, want one on port %d", resp.Brokers, b.port)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata v1 topics %+v", resp.Topics)
		}
		if p := resp.Topics[0].Partitions[0]; len(resp.Brokers) == 1 && p.Leader != resp.Brokers[0].NodeID {
			t.Errorf("Metadata v1 partition leader %d, want broker %d", p.Leader, resp.Brokers[0].NodeID)
		}
	})

	t.Run("fetch-v4", func(t *testing.T) {
		rc := dialRaw(t, b)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(4)
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 0
		fp.FetchOffset = 0
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := rc.roundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v4 response topics %+v", resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 6 || p.LastStableOffset != 6 {
			t.Errorf("Fetch v4: error %d high watermark %d last stable %d, want 0, 6, 6", p.ErrorCode, p.HighWatermark, p.LastStableOffset)
		}
		var got []string
		raw := p.RecordBatches
		for len(raw) >= 12 {
			n := int(binary.BigEndian.Uint32(raw[8:12]))
			if len(raw) < 12+n {
				break // a partial batch at the end is allowed
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(raw[:12+n]); err != nil {
				t.Fatalf("decoding a fetched batch: %v", err)
			}
			got = append(got, decodeValues(t, rb)...)
			raw = raw[12+n:]
		}
		if fmt.Sprint(got) != fmt.Sprint([]string{"v0", "v1", "v2", "v3", "v4", "v5"}) {
			t.Errorf("Fetch v4 returned values %q, want v0..v5", got)
		}
	})

	list := func(t *testing.T, rc *rawConn, version int16, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(version)
		req.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition = 0
		lp.Timestamp = timestamp
		lp.MaxNumOffsets = 1
		lt.Partitions = append(lt.Partitions, lp)
		req.Topics = append(req.Topics, lt)
		resp := rc.roundTrip(req).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ListOffsets v%d response topics %+v", version, resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}

	t.Run("list-offsets-v1", func(t *testing.T) {
		rc := dialRaw(t, b)
		if p := list(t, rc, 1, -1); p.ErrorCode != 0 || p.Offset != 6 {
			t.Errorf("ListOffsets v1 latest: error %d offset %d, want 6", p.ErrorCode, p.Offset)
		}
		if p := list(t, rc, 1, -2); p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("ListOffsets v1 earliest: error %d offset %d, want 0", p.ErrorCode, p.Offset)
		}
		if p := list(t, rc, 1, ts); p.ErrorCode != 0 || p.Offset != 0 || p.Timestamp != ts {
			t.Errorf("ListOffsets v1 at %d: error %d offset %d timestamp %d, want 0 at %d", ts, p.ErrorCode, p.Offset, p.Timestamp, ts)
		}
	})

	// v0 answers with a list of offsets instead of one; Kafka served it
	// until 4.0 (KIP-896).
	t.Run("list-offsets-v0", func(t *testing.T) {
		rc := dialRaw(t, b)
		if p := list(t, rc, 0, -1); p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 6 {
			t.Errorf("ListOffsets v0 latest: error %d offsets %v, want [6]", p.ErrorCode, p.OldStyleOffsets)
		}
		if p := list(t, rc, 0, -2); p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 0 {
			t.Errorf("ListOffsets v0 earliest: error %d offsets %v, want [0]", p.ErrorCode, p.OldStyleOffsets)
		}
	})
}

// decodeValues returns the values of an uncompressed v2 batch's records.
func decodeValues(t *testing.T, rb kmsg.RecordBatch) []string {
	t.Helper()
	if rb.Attributes&0x07 != 0 {
		t.Fatalf("fetched batch is compressed (attributes %#x); only uncompressed batches were produced", rb.Attributes)
	}
	var out []string
	raw := rb.Records
	for i := int32(0); i < rb.NumRecords; i++ {
		length, n := binary.Varint(raw)
		if n <= 0 || int64(len(raw)-n) < length {
			t.Fatalf("record %d: bad length", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		out = append(out, string(r.Value))
		raw = raw[n+int(length):]
	}
	return out
}

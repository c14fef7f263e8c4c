package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkDecodeProduce measures turning a Produce frame (3 partitions of
// 16 KiB record batches each) into a kmsg request: header parsing plus the
// body decode. The record bytes are sliced, not copied, so the cost should
// not grow with the batch size.
func BenchmarkDecodeProduce(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 30000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "bench"
	for p := int32(0); p < 3; p++ {
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition = p
		part.Records = make([]byte, 16<<10)
		topic.Partitions = append(topic.Partitions, part)
	}
	req.Topics = append(req.Topics, topic)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)[4:]
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		h, err := parseHeaderPrefix(frame)
		if err != nil {
			b.Fatal(err)
		}
		r := kmsg.RequestForKey(h.key)
		r.SetVersion(h.version)
		body, err := parseHeaderRest(&h, frame, r.IsFlexible())
		if err != nil {
			b.Fatal(err)
		}
		if err := r.ReadFrom(body); err != nil {
			b.Fatal(err)
		}
	}
}

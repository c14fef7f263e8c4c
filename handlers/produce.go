package handlers

// Produce (key 0), v3-v11: magic v2 record batches only (v3 is the first
// version that carries them).
//
// Batches are stored as sent: replication validates the frame, CRC-32C,
// record count and size, then the log rewrites only the base offset and the
// partition leader epoch (and, for LogAppendTime topics, the timestamp and
// CRC). acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS). With acks=0
// nothing is written back; if a partition failed the connection is closed
// instead, which is how Kafka lets such a producer notice. Produce never
// creates topics; clients learn of a topic through Metadata first.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerProduce(reg *protocol.Registry) {
	reg.Register(0, 3, 11, h.produce)
}

func (h *Handlers) produce(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond

	failed := false
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			var err error
			switch {
			case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case r.TransactionID != nil:
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			default:
				var info partition.AppendInfo
				tp := partition.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				info, err = h.replicas.Produce(ctx, tp, p.Records, r.Acks, timeout)
				if err == nil {
					rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = info.FirstOffset, info.LogAppendTime, info.LogStartOffset
				} else {
					rp.ErrorCode = errorCode(err)
					if req.Version >= 8 {
						rp.ErrorMessage = errorMessage(err)
					}
				}
			}
			if rp.ErrorCode != 0 {
				failed = true
				h.logger.Debug().Str("topic", t.Topic).Int32("partition", p.Partition).Int16("code", rp.ErrorCode).Err(err).Msg("produce failed")
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("acks=0 produce failed for a partition")
		}
		return nil, nil
	}
	return resp, nil
}

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
	"sync"
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

	// Partitions are appended and (for acks=all) waited on together, so a
	// request spanning many partitions takes one timeout, not one each.
	var wg sync.WaitGroup
	n := 0
	for _, t := range r.Topics {
		n += len(t.Partitions)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for ti, t := range r.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			switch {
			case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case r.TransactionID != nil:
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			default:
				one := func(topic string, records []byte) {
					tp := partition.TopicPartition{Topic: topic, Partition: rp.Partition}
					info, err := h.replicas.Produce(ctx, tp, records, r.Acks, timeout)
					if err == nil {
						rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = info.FirstOffset, info.LogAppendTime, info.LogStartOffset
						return
					}
					rp.ErrorCode = errorCode(err)
					if req.Version >= 8 {
						rp.ErrorMessage = errorMessage(err)
					}
					h.logger.Debug().Str("topic", topic).Int32("partition", rp.Partition).Int16("code", rp.ErrorCode).Err(err).Msg("produce failed")
				}
				if n == 1 {
					one(t.Topic, p.Records)
					break
				}
				wg.Add(1)
				go func(topic string, records []byte) {
					defer wg.Done()
					one(topic, records)
				}(t.Topic, p.Records)
			}
		}
	}
	wg.Wait()
	failed := false
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			failed = failed || rp.ErrorCode != 0
		}
	}
	if r.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("acks=0 produce failed for a partition")
		}
		return nil, nil
	}
	return resp, nil
}

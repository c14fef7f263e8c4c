package handlers

// DeleteRecords (key 21), v0-v2.
//
// Advances a partition's log start offset to the given offset (-1: the
// high watermark), deleting whole segments below it. An offset above the
// high watermark is OFFSET_OUT_OF_RANGE. The answer carries the new low
// watermark.
//
// Authorization (authz.go): DELETE on each topic
// (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDeleteRecords(reg *protocol.Registry) {
	reg.Register(21, 0, 2, h.deleteRecords)
}

func (h *Handlers) deleteRecords(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	deleteAllowed := h.topicAuthorizer(req, acl.OpDelete)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			if !deleteAllowed(t.Topic) {
				rp.LowWatermark = -1
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			low, err := h.replicas.DeleteRecords(partition.TopicPartition{Topic: t.Topic, Partition: p.Partition}, p.Offset)
			rp.LowWatermark = low
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

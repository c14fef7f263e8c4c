package handlers

// DescribeProducers (key 61), v0 (KIP-664): the producers a partition
// leader tracks: id, epoch, last sequence and timestamp, and the first
// offset of the open transaction (-1 if none), which is what an operator
// needs to find a transaction holding the last stable offset back.
//
// Authorization (authz.go): READ on each topic
// (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDescribeProducers(reg *protocol.Registry) {
	reg.Register(61, 0, 0, h.describeProducers)
}

func (h *Handlers) describeProducers(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	read := h.topicAuthorizer(req, acl.OpRead)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if !read(t.Topic) {
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			prods, err := h.replicas.Producers(partition.TopicPartition{Topic: t.Topic, Partition: p})
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			}
			for _, pe := range prods {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = pe.ProducerID, int32(pe.Epoch)
				ap.LastSequence, ap.LastTimestamp = pe.LastSequence, pe.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pe.CoordinatorEpoch, pe.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

package handlers

// OffsetForLeaderEpoch (key 23), v0-v4, as consumers use it (KIP-320): for
// the requested leader epoch, the largest epoch at or below it that this
// leader knows and that epoch's end offset, so the client can detect a
// truncated log. The current leader epoch (v2+) is checked: older is
// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. Follower use (replica id
// >= 0, v3+) comes with replication.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerOffsetForLeaderEpoch(reg *protocol.Registry) {
	reg.Register(23, 0, 4, h.offsetForLeaderEpoch)
}

func (h *Handlers) offsetForLeaderEpoch(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			current := p.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1
			}
			epoch, end, err := h.replicas.OffsetForLeaderEpoch(partition.TopicPartition{Topic: t.Topic, Partition: p.Partition}, current, p.LeaderEpoch)
			rp.ErrorCode = errorCode(err)
			rp.LeaderEpoch, rp.EndOffset = epoch, end
			if err != nil {
				rp.LeaderEpoch, rp.EndOffset = -1, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

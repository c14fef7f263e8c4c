package handlers

// OffsetForLeaderEpoch (key 23), v0-v4: for the requested leader epoch, the
// largest epoch at or below it that this leader knows and that epoch's end
// offset (the start of the next epoch, or the log end for the latest).
//
// Followers (replica id >= 0, v3+) use it to truncate by epoch after a
// leader change (KIP-101, KIP-279); consumers to detect a truncated log
// (KIP-320). Both are answered by the leader only, from its epoch cache, in
// which the current epoch starts where this broker became leader even
// before it wrote anything in it. The current leader epoch (v2+) is
// checked: older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, -1
// skips the check.
//
// Authorization (authz.go), as Kafka's: a replica's request (replica id >=
// 0) needs CLUSTER_ACTION on the cluster, or every partition answers
// CLUSTER_AUTHORIZATION_FAILED; each topic needs DESCRIBE
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerOffsetForLeaderEpoch(reg *protocol.Registry) {
	reg.Register(23, 0, 4, h.offsetForLeaderEpoch)
}

func (h *Handlers) offsetForLeaderEpoch(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	if replicaID(req) >= 0 && !h.authorizeCluster(req, acl.OpClusterAction) {
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
				rp.ErrorCode = errorCode(errClusterAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
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
			if !describe(t.Topic) {
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
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

package handlers

// OffsetDelete (key 47), v0 (KIP-496).
//
// Deletes committed offsets of a group. An empty group may lose any; a
// consumer group with members only those of topics none of them subscribes
// to (GROUP_SUBSCRIBED_TO_TOPIC otherwise); any other group with members
// answers NON_EMPTY_GROUP.
//
// Authorization (authz.go), as Kafka's: DELETE on the group
// (GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerOffsetDelete(reg *protocol.Registry) {
	reg.Register(47, 0, 0, h.offsetDelete)
}

func (h *Handlers) offsetDelete(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !h.authorize(req, acl.OpDelete, acl.ResourceGroup, r.Group) {
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp, nil
	}
	c := h.coordinator()
	if c == nil {
		resp.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
		return resp, nil
	}
	read := h.topicAuthorizer(req, acl.OpRead)
	var tps []group.TopicPartition
	for _, t := range r.Topics {
		if !read(t.Topic) {
			continue
		}
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	gerr, errs := c.DeleteOffsets(ctx, r.Group, tps)
	if gerr != nil {
		resp.ErrorCode = errorCode(gerr)
		return resp, nil
	}
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if !read(t.Topic) {
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.ErrorCode = errorCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

package handlers

// DescribeShareGroupOffsets (key 90) v0-v1, AlterShareGroupOffsets (91) v0
// and DeleteShareGroupOffsets (92) v0, served by the group's coordinator
// (NOT_COORDINATOR elsewhere).
//
// Describe reports each partition's share-partition start offset: the
// live value where this broker leads the partition, else the start offset
// its leader last checkpointed to the metadata (group.share.checkpoint.
// interval.ms behind at most); -1 for a partition the group never
// consumed. v1 adds the lag (-1 when unknown). Null topics describe every
// partition the group has state for.
//
// Alter and Delete need an empty group (NON_EMPTY_GROUP otherwise). Alter
// sets start offsets; Delete removes a topic's share state, so the next
// consumption starts by share.auto.offset.reset. Both go through the
// metadata quorum and leaders rebuild their share partitions from it.
//
// Authorization (authz.go), as Kafka's: DESCRIBE (Describe), READ (Alter)
// or DELETE (Delete) on the group, else GROUP_AUTHORIZATION_FAILED; then
// DESCRIBE (Describe) or READ (Alter, Delete) on each topic, else
// TOPIC_AUTHORIZATION_FAILED for it (a Describe of all the group's topics
// leaves such topics out).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShareGroupOffsets(reg *protocol.Registry) {
	reg.Register(90, 0, 1, h.describeShareGroupOffsets)
	reg.Register(91, 0, 0, h.alterShareGroupOffsets)
	reg.Register(92, 0, 0, h.deleteShareGroupOffsets)
}

func (h *Handlers) describeShareGroupOffsets(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	im := h.meta.Image()
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	for _, g := range r.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if err := h.shareOffsetsGroupErr(req, acl.OpDescribe, g.GroupID, false); err != nil {
			rg.ErrorCode, rg.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		var want map[string][]int32
		if g.Topics != nil {
			want = map[string][]int32{}
			for _, t := range g.Topics {
				want[t.Topic] = append(want[t.Topic], t.Partitions...)
			}
		}
		byTopic := map[string]int{}
		for _, oi := range h.shareMgr.Offsets(g.GroupID, want) {
			allowed := describe(oi.Topic)
			if !allowed && want == nil {
				// All of the group's topics: Kafka leaves out those the
				// client may not describe.
				continue
			}
			i, ok := byTopic[oi.Topic]
			if !ok {
				i = len(rg.Topics)
				byTopic[oi.Topic] = i
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic, rt.TopicID = oi.Topic, shareTopicID(im, oi.Topic)
				rg.Topics = append(rg.Topics, rt)
			}
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = oi.Partition, oi.StartOffset, oi.LeaderEpoch, oi.Lag
			switch {
			case !allowed:
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rp.StartOffset, rp.LeaderEpoch, rp.Lag = -1, -1, -1
			case im.Partition(oi.Topic, oi.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.StartOffset, rp.LeaderEpoch, rp.Lag = -1, -1, -1
			}
			rg.Topics[i].Partitions = append(rg.Topics[i].Partitions, rp)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func (h *Handlers) alterShareGroupOffsets(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err := h.shareOffsetsGroupErr(req, acl.OpRead, r.GroupID, true); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	im := h.meta.Image()
	read := h.topicAuthorizer(req, acl.OpRead)
	offsets := map[string]map[int32]int64{}
	partErr := map[string]map[int32]error{}
	for _, t := range r.Topics {
		partErr[t.Topic] = map[int32]error{}
		for _, p := range t.Partitions {
			switch {
			case !read(t.Topic):
				partErr[t.Topic][p.Partition] = errTopicAuthorization
			case im.Partition(t.Topic, p.Partition) == nil:
				partErr[t.Topic][p.Partition] = kerr.UnknownTopicOrPartition
			case p.StartOffset < 0:
				partErr[t.Topic][p.Partition] = fmt.Errorf("%w: negative start offset", share.ErrInvalidRequest)
			default:
				if offsets[t.Topic] == nil {
					offsets[t.Topic] = map[int32]int64{}
				}
				offsets[t.Topic][p.Partition] = p.StartOffset
			}
		}
	}
	var werr error
	if len(offsets) > 0 {
		werr = h.shareMgr.Reset(ctx, r.GroupID, offsets, nil)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, shareTopicID(im, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			e := partErr[t.Topic][p.Partition]
			if e == nil {
				e = werr
			}
			rp.ErrorCode, rp.ErrorMessage = errorCode(e), errorMessage(e)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (h *Handlers) deleteShareGroupOffsets(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err := h.shareOffsetsGroupErr(req, acl.OpDelete, r.GroupID, true); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	im := h.meta.Image()
	read := h.topicAuthorizer(req, acl.OpRead)
	var topics []string
	for _, t := range r.Topics {
		if read(t.Topic) && im.Topic(t.Topic) != nil {
			topics = append(topics, t.Topic)
		}
	}
	var werr error
	if len(topics) > 0 {
		werr = h.shareMgr.Reset(ctx, r.GroupID, nil, topics)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		e := werr
		if ti := im.Topic(t.Topic); ti != nil {
			rt.TopicID = ti.ID
		} else {
			e = kerr.UnknownTopicOrPartition
		}
		if !read(t.Topic) {
			rt.TopicID, e = [16]byte{}, errTopicAuthorization
		}
		rt.ErrorCode, rt.ErrorMessage = errorCode(e), errorMessage(e)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// shareOffsetsGroupErr checks the group of a Describe, Alter or
// DeleteShareGroupOffsets: GROUP_AUTHORIZATION_FAILED without op on the
// group (Kafka's DESCRIBE, READ and DELETE respectively),
// COORDINATOR_NOT_AVAILABLE while the share side is not wired,
// NOT_COORDINATOR where another broker coordinates it, and with
// requireEmpty (Alter, Delete) NON_EMPTY_GROUP while it has members.
func (h *Handlers) shareOffsetsGroupErr(req *protocol.Request, op acl.Operation, groupID string, requireEmpty bool) error {
	switch {
	case !h.authorize(req, op, acl.ResourceGroup, groupID):
		return errGroupAuthorization
	case !h.shareReady():
		return share.ErrCoordinatorUnavailable
	case requireEmpty:
		return h.shareCoord.RequireEmpty(groupID)
	default:
		return h.shareCoord.Owns(groupID)
	}
}

// shareTopicID is a topic's id for a share offsets response, zero for a
// topic that does not exist.
func shareTopicID(im *cluster.Image, topic string) [16]byte {
	if ti := im.Topic(topic); ti != nil {
		return ti.ID
	}
	return [16]byte{}
}

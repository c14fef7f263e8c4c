package handlers

// OffsetFetch (key 9), v0-v10.
//
// v0 (which in Kafka once read ZooKeeper) is served like v1, from
// __consumer_offsets. From v2 a null topic list asks for every committed
// offset and errors are reported at the top level; below v2 a group error
// is repeated on every requested partition. v5 adds the leader epoch, v7
// RequireStable (KIP-447: a partition whose offset a transaction not yet
// decided has committed answers UNSTABLE_OFFSET_COMMIT, which the consumer
// retries), v8 batches groups (KIP-709). A partition with no commit
// answers offset -1 and empty metadata. v9 carries the member id and epoch
// (KIP-848): a member of a consumer-protocol group with a stale epoch
// answers STALE_MEMBER_EPOCH. v10 (Kafka 4.1) names topics by id: a
// requested id the cluster does not know answers UNKNOWN_TOPIC_ID on its
// partitions, and asking for every offset leaves out topics that no
// longer exist (they have no id to name them by).
//
// Authorization (authz.go), as Kafka's: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED); a named topic the client may not describe
// answers TOPIC_AUTHORIZATION_FAILED, and an all-topics fetch leaves such
// topics out.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerOffsetFetch(reg *protocol.Registry) {
	reg.Register(9, 0, 10, h.offsetFetch)
}

// fetchGroupOffsets answers one group: topics nil means all. refused
// holds the named topics the client may not describe, answered with -1
// offsets.
func (h *Handlers) fetchGroupOffsets(req *protocol.Request, groupID string, memberID *string, memberEpoch int32, topics map[string][]int32, order []string) (byTopic map[string][]group.FetchedOffset, names []string, refused map[string]bool, err error) {
	if !h.authorize(req, acl.OpDescribe, acl.ResourceGroup, groupID) {
		return nil, nil, nil, errGroupAuthorization
	}
	c := h.coordinator()
	if c == nil {
		return nil, nil, nil, group.ErrCoordinatorNotAvailable
	}
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	byTopic, refused = map[string][]group.FetchedOffset{}, map[string]bool{}
	var tps []group.TopicPartition
	if topics != nil {
		tps = []group.TopicPartition{}
		for _, t := range order {
			if !describe(t) {
				refused[t] = true
				continue
			}
			for _, p := range topics[t] {
				tps = append(tps, group.TopicPartition{Topic: t, Partition: p})
			}
		}
	}
	got, err := c.FetchOffsetsAs(groupID, memberID, memberEpoch, tps)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, t := range order {
		if !refused[t] {
			continue
		}
		names = append(names, t)
		for _, p := range topics[t] {
			byTopic[t] = append(byTopic[t], group.FetchedOffset{TP: group.TopicPartition{Topic: t, Partition: p}, OffsetAndMetadata: group.OffsetAndMetadata{Offset: -1, LeaderEpoch: -1}})
		}
	}
	for _, o := range got {
		if topics == nil && !describe(o.TP.Topic) {
			// All of a group's offsets: Kafka leaves out the topics
			// the client may not describe.
			continue
		}
		if _, ok := byTopic[o.TP.Topic]; !ok {
			names = append(names, o.TP.Topic)
		}
		byTopic[o.TP.Topic] = append(byTopic[o.TP.Topic], o)
	}
	return byTopic, names, refused, nil
}

func (h *Handlers) offsetFetch(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		im := h.meta.Image()
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			var topics map[string][]int32
			var order []string
			var unknownIDs []kmsg.OffsetFetchRequestGroupTopic
			if g.Topics != nil {
				topics = map[string][]int32{}
				for _, t := range g.Topics {
					name := t.Topic
					if req.Version >= 10 {
						var ok bool
						if name, ok = im.IDs[t.TopicID]; !ok {
							unknownIDs = append(unknownIDs, t)
							continue
						}
					}
					if _, ok := topics[name]; !ok {
						order = append(order, name)
					}
					topics[name] = append(topics[name], t.Partitions...)
				}
			}
			memberID, epoch := (*string)(nil), int32(-1)
			if req.Version >= 9 {
				memberID, epoch = g.MemberID, g.MemberEpoch
			}
			byTopic, names, refused, err := h.fetchGroupOffsets(req, g.Group, memberID, epoch, topics, order)
			rg.ErrorCode = errorCode(err)
			for _, name := range names {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = name
				if req.Version >= 10 {
					ti := im.Topic(name)
					if ti == nil {
						continue // deleted: no id to answer with
					}
					rt.TopicID = ti.ID
				}
				for _, o := range byTopic[name] {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.TP.Partition, o.Offset, o.LeaderEpoch, strPtr(o.Metadata)
					if r.RequireStable && o.Pending {
						rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
					}
					if refused[name] {
						rp.ErrorCode = errorCode(errTopicAuthorization)
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			if err == nil {
				for _, t := range unknownIDs {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.TopicID = t.TopicID
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, strPtr(""), kerr.UnknownTopicID.Code
						rt.Partitions = append(rt.Partitions, rp)
					}
					rg.Topics = append(rg.Topics, rt)
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}

	var topics map[string][]int32
	var order []string
	if r.Topics != nil || req.Version < 2 {
		topics = map[string][]int32{}
		for _, t := range r.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	byTopic, names, refused, err := h.fetchGroupOffsets(req, r.Group, nil, -1, topics, order)
	if err != nil {
		if req.Version >= 2 {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		// v0-v1 have no top-level error: every partition carries it.
		for _, name := range order {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = name
			for _, p := range topics[name] {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, strPtr(""), errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, name := range names {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = name
		for _, o := range byTopic[name] {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.TP.Partition, o.Offset, o.LeaderEpoch, strPtr(o.Metadata)
			if req.Version >= 7 && r.RequireStable && o.Pending {
				rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
			}
			if refused[name] {
				rp.ErrorCode = errorCode(errTopicAuthorization)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

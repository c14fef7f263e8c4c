package handlers

// OffsetCommit (key 8), v0-v10.
//
// v0 commits outside group management (generation -1, no member). v1
// carries a per-partition commit timestamp (-1: now). v2-v4 carry a
// retention time that sets an explicit expiry (-1: the broker's
// offsets.retention.minutes); v5 dropped it. v6 adds the committed leader
// epoch, v7 group.instance.id (KIP-345), v8+ is flexible. Partitions of
// topics that do not exist answer UNKNOWN_TOPIC_OR_PARTITION; metadata
// beyond offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE. The answer
// waits until the commit is replicated to the ISR of the group's
// __consumer_offsets partition. For a consumer-protocol group (KIP-848)
// the generation is the member epoch: v9+ is required of its members, a
// wrong epoch answers STALE_MEMBER_EPOCH. v10 (Kafka 4.1) names topics by
// id, in the request and the answer; an id the cluster does not know
// answers UNKNOWN_TOPIC_ID.
//
// Authorization (authz.go), as Kafka's: READ on the group
// (GROUP_AUTHORIZATION_FAILED on every partition) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerOffsetCommit(reg *protocol.Registry) {
	reg.Register(8, 0, 10, h.offsetCommit)
}

func (h *Handlers) offsetCommit(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	c := h.coordinator()
	im := h.meta.Image()
	now := time.Now().UnixMilli()

	p := group.CommitParams{MemberID: r.MemberID, InstanceID: r.InstanceID, Generation: r.Generation, APIVersion: req.Version}
	if req.Version == 0 {
		p.MemberID, p.Generation = "", -1
	}
	if req.Version < 7 {
		p.InstanceID = nil
	}
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && r.RetentionTimeMillis != -1 {
		expire = now + r.RetentionTimeMillis
	}

	groupOK := h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group)
	read := h.topicAuthorizer(req, acl.OpRead)
	type slot struct{ t, p int }
	var slots []slot
	for ti, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, idKnown := t.Topic, true
		if req.Version >= 10 {
			name, idKnown = im.IDs[t.TopicID]
		}
		for pi, pt := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = pt.Partition
			switch {
			case !groupOK:
				rp.ErrorCode = errorCode(errGroupAuthorization)
			case !idKnown:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !read(name):
				rp.ErrorCode = errorCode(errTopicAuthorization)
			case c == nil:
				rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			case im.Partition(name, pt.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				o := group.OffsetAndMetadata{Offset: pt.Offset, LeaderEpoch: -1, CommitTimestamp: now, ExpireTimestamp: expire}
				if pt.Metadata != nil {
					o.Metadata = *pt.Metadata
				}
				if req.Version >= 6 && pt.LeaderEpoch >= 0 {
					o.LeaderEpoch = pt.LeaderEpoch
				}
				if req.Version == 1 && pt.Timestamp != -1 {
					o.CommitTimestamp = pt.Timestamp
				}
				p.Offsets = append(p.Offsets, group.CommitOffset{TP: group.TopicPartition{Topic: name, Partition: pt.Partition}, OffsetAndMetadata: o})
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(p.Offsets) > 0 {
		errs := c.CommitOffsets(ctx, r.Group, p)
		for i, s := range slots {
			resp.Topics[s.t].Partitions[s.p].ErrorCode = errorCode(errs[i])
		}
	}
	return resp, nil
}

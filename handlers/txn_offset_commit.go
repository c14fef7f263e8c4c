package handlers

// TxnOffsetCommit (key 28), v0-v3.
//
// Commits a consumer group's offsets inside the producer's transaction:
// they are written to the group's __consumer_offsets partition as a
// transactional batch and become the group's committed offsets only when
// the transaction commits (an abort drops them). v2 adds the committed
// leader epoch, v3 the group generation, member id and instance id
// (KIP-447), checked like OffsetCommit's when given. Partitions of topics
// that do not exist answer UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization (authz.go), as Kafka's: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the
// group (GROUP_AUTHORIZATION_FAILED on every partition) and READ on each
// topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerTxnOffsetCommit(reg *protocol.Registry) {
	reg.Register(28, 0, 3, h.txnOffsetCommit)
}

func (h *Handlers) txnOffsetCommit(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	c := h.coordinator()
	im := h.meta.Image()
	now := time.Now().UnixMilli()
	p := group.TxnCommitParams{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, CommitParams: group.CommitParams{Generation: -1}}
	if req.Version >= 3 {
		p.MemberID, p.InstanceID, p.Generation = r.MemberID, r.InstanceID, r.Generation
	}
	var refuseAll error
	switch {
	case !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, r.TransactionalID):
		refuseAll = errTxnIDAuthorization
	case !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group):
		refuseAll = errGroupAuthorization
	}
	read := h.topicAuthorizer(req, acl.OpRead)
	type slot struct{ t, p int }
	var slots []slot
	for ti, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, pt := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = pt.Partition
			switch {
			case refuseAll != nil:
				rp.ErrorCode = errorCode(refuseAll)
			case !read(t.Topic):
				rp.ErrorCode = errorCode(errTopicAuthorization)
			case c == nil:
				rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			case im.Partition(t.Topic, pt.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				o := group.OffsetAndMetadata{Offset: pt.Offset, LeaderEpoch: -1, CommitTimestamp: now, ExpireTimestamp: -1}
				if pt.Metadata != nil {
					o.Metadata = *pt.Metadata
				}
				if req.Version >= 2 && pt.LeaderEpoch >= 0 {
					o.LeaderEpoch = pt.LeaderEpoch
				}
				p.Offsets = append(p.Offsets, group.CommitOffset{TP: group.TopicPartition{Topic: t.Topic, Partition: pt.Partition}, OffsetAndMetadata: o})
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(slots) == 0 {
		return resp, nil
	}
	errs := c.TxnCommitOffsets(ctx, r.Group, p)
	for i, s := range slots {
		resp.Topics[s.t].Partitions[s.p].ErrorCode = errorCode(errs[i])
	}
	return resp, nil
}

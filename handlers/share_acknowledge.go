package handlers

// ShareAcknowledge (key 79), v1-v2.
//
// Acknowledges records a member acquired through ShareFetch on this
// broker, in its open share session: epoch 0 is INVALID_SHARE_SESSION_EPOCH
// (acknowledging needs a session), a positive epoch must be the session's
// next one, and -1 also closes the session, releasing what the member
// still holds here. Types: 0 gap, 1 accept, 2 release, 3 reject, and with
// v2's IsRenewAck 4 renew (KIP-1222), which extends the acquisition lock.
// Each partition's batches are validated as a whole before any applies:
// offsets ascending, one type or one per offset, every offset acquired by
// this member (INVALID_RECORD_STATE otherwise). v2 reports the group's
// acquisition lock duration.
//
// Authorization (authz.go), as Kafka's: READ on the group
// (GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShareAcknowledge(reg *protocol.Registry) {
	reg.Register(79, 1, 2, h.shareAcknowledge)
}

func (h *Handlers) shareAcknowledge(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if !h.shareReady() {
		resp.ErrorCode = errorCode(share.ErrCoordinatorUnavailable)
		return resp, nil
	}
	groupID, memberID := shareIDs(r.GroupID, r.MemberID)
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, groupID) {
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp, nil
	}
	read := h.shareTopicAuthorizer(req)
	var refused []kmsg.ShareAcknowledgeResponseTopic
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = h.shareMgr.LockDurationMs(groupID)
	}
	ar := share.AckRequest{Group: groupID, Member: memberID, SessionEpoch: r.ShareSessionEpoch, Renew: req.Version >= 2 && r.IsRenewAck}
	for _, t := range r.Topics {
		if !read(t.TopicID) {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errorCode(errTopicAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			continue
		}
		for _, p := range t.Partitions {
			a := share.PartitionAcks{TP: share.TP{ID: cluster.TopicID(t.TopicID), Partition: p.Partition}}
			for _, b := range p.AcknowledgementBatches {
				a.Batches = append(a.Batches, share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
			ar.Acks = append(ar.Acks, a)
		}
	}
	results, err := h.shareMgr.Acknowledge(ar)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return resp, nil
	}
	im := h.meta.Image()
	topics, notLeader := shareResponseTopics(im, results,
		func(res share.PartitionResult) error { return res.AckErr },
		func(id [16]byte) kmsg.ShareAcknowledgeResponseTopic {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = id
			return rt
		},
		func(rt *kmsg.ShareAcknowledgeResponseTopic, res share.PartitionResult, st sharePartitionStatus) {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = res.TP.Partition
			rp.ErrorCode = st.ErrorCode
			rp.ErrorMessage = errorMessage(res.AckErr)
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.LeaderID, st.LeaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
		})
	resp.Topics = append(topics, refused...)
	if notLeader {
		resp.NodeEndpoints = shareNodeEndpoints(im, func(b cluster.BrokerInfo) kmsg.ShareAcknowledgeResponseNodeEndpoint {
			ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			ne.NodeID, ne.Rack = b.NodeID, b.Rack
			ne.Host, ne.Port = endpoint(b, req.Conn)
			return ne
		})
	}
	return resp, nil
}

package handlers

// ShareFetch (key 78), v1-v2 (v0 was Kafka 4.0's early access).
//
// Sent to a partition's leader by a share-group member: it acquires
// records for the member (AcquiredRecords: offset ranges with their
// delivery counts, locked for the group's share.record.lock.duration.ms,
// reported as AcquisitionLockTimeoutMillis) and returns the record batches
// holding them; the client drops the records outside the ranges and
// acknowledges those offsets as gaps. Acknowledgements of earlier
// deliveries ride along per partition (AcknowledgeErrorCode).
//
// Share sessions (KIP-932): epoch 0 opens one for (group, member) on this
// broker with the request's partitions (acknowledgements there are
// INVALID_REQUEST); a positive epoch must be the session's next one
// (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a
// session) and adds the request's partitions and removes the forgotten
// ones; -1 applies the acknowledgements, releases what the member still
// holds here and closes the session. A closed connection closes its
// sessions the same way.
//
// When nothing can be acquired the request parks until a partition's high
// watermark moves, records are released, or MaxWaitMillis passes. MaxRecords
// bounds the records acquired (500 when unset); BatchSize splits the
// acquired ranges (v2's ShareAcquireMode 0, batch-optimized; mode 1 is
// served the same way). v2's IsRenewAck (KIP-1222) carries only
// acknowledgements, which may be AckRenew (4): the locks are extended and
// nothing is fetched; the fetch fields must then be zero.
//
// Authorization (authz.go), as Kafka's: READ on the group
// (GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions, which are neither
// fetched nor acknowledged).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShareFetch(reg *protocol.Registry) {
	reg.Register(78, 1, 2, h.shareFetch)
}

func (h *Handlers) shareFetch(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareFetchRequest)
	// It may wait (a rebalance, records to arrive): as Kafka parks it in
	// purgatory, it holds no queued.max.requests slot.
	req.Park()
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
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
	var refused []kmsg.ShareFetchResponseTopic
	resp.AcquisitionLockTimeoutMillis = h.shareMgr.LockDurationMs(groupID)
	renew := req.Version >= 2 && r.IsRenewAck
	if renew && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	fr := share.FetchRequest{
		Group: groupID, Member: memberID, SessionEpoch: r.ShareSessionEpoch,
		Conn:    ctx,
		MaxWait: time.Duration(r.MaxWaitMillis) * time.Millisecond, MinBytes: r.MinBytes, MaxBytes: r.MaxBytes,
		MaxRecords: int(r.MaxRecords), Renew: renew, AllowRenew: renew,
	}
	if r.ShareAcquireMode == 0 {
		fr.BatchSize = int(r.BatchSize)
	}
	for _, t := range r.Topics {
		if !read(t.TopicID) {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewShareFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errorCode(errTopicAuthorization)
				rp.Records = []byte{}
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			continue
		}
		for _, p := range t.Partitions {
			tp := share.TP{ID: cluster.TopicID(t.TopicID), Partition: p.Partition}
			if renew && len(p.AcknowledgementBatches) == 0 {
				resp.ErrorCode = kerr.InvalidRequest.Code
				return resp, nil
			}
			if !renew {
				fr.Partitions = append(fr.Partitions, tp)
			}
			if len(p.AcknowledgementBatches) > 0 {
				a := share.PartitionAcks{TP: tp}
				for _, b := range p.AcknowledgementBatches {
					a.Batches = append(a.Batches, share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
				}
				fr.Acks = append(fr.Acks, a)
			}
		}
	}
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			fr.Forget = append(fr.Forget, share.TP{ID: cluster.TopicID(t.TopicID), Partition: p})
		}
	}
	results, err := h.shareMgr.Fetch(ctx, fr)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return resp, nil
	}
	im := h.meta.Image()
	topics, notLeader := shareResponseTopics(im, results,
		func(res share.PartitionResult) error { return res.Err },
		func(id [16]byte) kmsg.ShareFetchResponseTopic {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = id
			return rt
		},
		func(rt *kmsg.ShareFetchResponseTopic, res share.PartitionResult, st sharePartitionStatus) {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition = res.TP.Partition
			rp.ErrorCode = st.ErrorCode
			rp.AcknowledgeErrorCode = errorCode(res.AckErr)
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.LeaderID, st.LeaderEpoch
			rp.Records = res.Records
			if rp.Records == nil {
				rp.Records = []byte{}
			}
			for _, a := range res.Acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
			}
			rt.Partitions = append(rt.Partitions, rp)
		})
	resp.Topics = append(topics, refused...)
	if notLeader {
		resp.NodeEndpoints = shareNodeEndpoints(im, func(b cluster.BrokerInfo) kmsg.ShareFetchResponseNodeEndpoint {
			ne := kmsg.NewShareFetchResponseNodeEndpoint()
			ne.NodeID, ne.Rack = b.NodeID, b.Rack
			ne.Host, ne.Port = endpoint(b, req.Conn)
			return ne
		})
	}
	return resp, nil
}

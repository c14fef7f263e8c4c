package handlers

// JoinGroup (key 11), v0-v9.
//
// The request parks until the rebalance completes (or the member is told
// to rejoin, or the connection goes). v0 has no rebalance timeout: the
// session timeout serves as both, as in Kafka. From v4 a member without an
// id first gets MEMBER_ID_REQUIRED with its id assigned and must join again
// with it (KIP-394); static members (group.instance.id, v5+, KIP-345) are
// exempt. Below v7 a missing protocol name is answered "" (the field was
// not nullable). v9 may set SkipAssignment for a rejoining static leader
// (KIP-814).
//
// Authorization (authz.go): READ on the group, else
// GROUP_AUTHORIZATION_FAILED, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerJoinGroup(reg *protocol.Registry) {
	reg.Register(11, 0, 9, h.joinGroup)
}

func (h *Handlers) joinGroup(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	// It may wait (a rebalance, records to arrive): as Kafka parks it in
	// purgatory, it holds no queued.max.requests slot.
	req.Park()
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	if h.refuseShareGroupJoin(r.Group, resp) {
		return resp, nil
	}
	var res group.JoinResult
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group) {
		res = group.JoinResult{Err: errGroupAuthorization, Generation: -1}
	} else if c := h.coordinator(); c == nil {
		res = group.JoinResult{Err: group.ErrCoordinatorNotAvailable, MemberID: r.MemberID, Generation: -1}
	} else {
		p := group.JoinParams{
			MemberID:              r.MemberID,
			InstanceID:            r.InstanceID,
			ClientID:              req.ClientID,
			ClientHost:            clientHost(req),
			RebalanceTimeoutMs:    r.RebalanceTimeoutMillis,
			SessionTimeoutMs:      r.SessionTimeoutMillis,
			ProtocolType:          r.ProtocolType,
			RequireKnownMemberID:  req.Version >= 4 && r.InstanceID == nil,
			SupportSkipAssignment: req.Version >= 9,
		}
		if req.Version == 0 {
			p.RebalanceTimeoutMs = r.SessionTimeoutMillis
		}
		if req.Version < 5 {
			p.InstanceID = nil
		}
		for _, pr := range r.Protocols {
			p.Protocols = append(p.Protocols, group.Protocol{Name: pr.Name, Metadata: pr.Metadata})
		}
		res = c.JoinGroup(ctx, r.Group, p)
	}
	resp.ErrorCode = errorCode(res.Err)
	resp.Generation = res.Generation
	resp.ProtocolType = res.ProtocolType
	resp.Protocol = res.ProtocolName
	if req.Version < 7 && resp.Protocol == nil {
		resp.Protocol = strPtr("")
	}
	resp.LeaderID = res.LeaderID
	resp.MemberID = res.MemberID
	resp.SkipAssignment = res.SkipAssignment
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

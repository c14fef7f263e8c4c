package handlers

// SyncGroup (key 14), v0-v5.
//
// The leader sends the assignment; every member (leader included) waits
// until it is stored in __consumer_offsets and then gets its own part.
// v3 adds group.instance.id (KIP-345); v5 adds the protocol type and name,
// which must match the group's (INCONSISTENT_GROUP_PROTOCOL otherwise) and
// are echoed back.
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

func (h *Handlers) registerSyncGroup(reg *protocol.Registry) {
	reg.Register(14, 0, 5, h.syncGroup)
}

func (h *Handlers) syncGroup(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.SyncGroupRequest)
	// It may wait (a rebalance, records to arrive): as Kafka parks it in
	// purgatory, it holds no queued.max.requests slot.
	req.Park()
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	var res group.SyncResult
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group) {
		res.Err = errGroupAuthorization
	} else if c := h.coordinator(); c == nil {
		res.Err = group.ErrCoordinatorNotAvailable
	} else {
		p := group.SyncParams{
			MemberID:    r.MemberID,
			InstanceID:  r.InstanceID,
			Generation:  r.Generation,
			Assignments: make(map[string][]byte, len(r.GroupAssignment)),
		}
		if req.Version < 3 {
			p.InstanceID = nil
		}
		if req.Version >= 5 {
			p.ProtocolType, p.ProtocolName = r.ProtocolType, r.Protocol
		}
		for _, a := range r.GroupAssignment {
			p.Assignments[a.MemberID] = a.MemberAssignment
		}
		res = c.SyncGroup(ctx, r.Group, p)
	}
	resp.ErrorCode = errorCode(res.Err)
	resp.ProtocolType, resp.Protocol = res.ProtocolType, res.ProtocolName
	resp.MemberAssignment = res.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp, nil
}

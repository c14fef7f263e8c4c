package handlers

// LeaveGroup (key 13), v0-v5.
//
// v0-v2 name one member; v3+ batch members, each by member id or, for the
// administrative removal of a static member, by group.instance.id alone
// (KIP-345), and answer per member. For v0-v2 the member's error is the
// response's error.
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

func (h *Handlers) registerLeaveGroup(reg *protocol.Registry) {
	reg.Register(13, 0, 5, h.leaveGroup)
}

func (h *Handlers) leaveGroup(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	var members []group.LeaveMember
	if req.Version < 3 {
		members = []group.LeaveMember{{MemberID: r.MemberID}}
	} else {
		for _, m := range r.Members {
			members = append(members, group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group) {
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp, nil
	}
	c := h.coordinator()
	if c == nil {
		resp.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
		return resp, nil
	}
	gerr, errs := c.LeaveGroup(r.Group, members)
	if gerr != nil {
		resp.ErrorCode = errorCode(gerr)
		return resp, nil
	}
	if req.Version < 3 {
		resp.ErrorCode = errorCode(errs[0])
		return resp, nil
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

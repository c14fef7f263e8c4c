package handlers

// Heartbeat (key 12), v0-v4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells a member of
// a stable generation to rejoin; while the coordinator is still loading the
// group the answer is NONE, as in Kafka, so members keep their sessions.
// v3 adds group.instance.id (FENCED_INSTANCE_ID for a stale member id).
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

func (h *Handlers) registerHeartbeat(reg *protocol.Registry) {
	reg.Register(12, 0, 4, h.heartbeat)
}

func (h *Handlers) heartbeat(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group) {
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp, nil
	}
	c := h.coordinator()
	if c == nil {
		resp.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
		return resp, nil
	}
	instance := r.InstanceID
	if req.Version < 3 {
		instance = nil
	}
	resp.ErrorCode = errorCode(c.Heartbeat(r.Group, r.MemberID, instance, r.Generation))
	return resp, nil
}

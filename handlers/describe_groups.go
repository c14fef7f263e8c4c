package handlers

// DescribeGroups (key 15), v0-v5.
//
// A group this coordinator does not know is described as Dead with no
// error (GROUP_ID_NOT_FOUND is v6+). Member metadata, assignments and the
// protocol are reported only for a Stable group, as Kafka does. v3 may ask
// for the authorized operations (KIP-430): with no authorizer every group
// operation is allowed. v4 adds group.instance.id.
//
// Authorization (authz.go): DESCRIBE on each group, else
// GROUP_AUTHORIZATION_FAILED for it, as in Kafka.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

// groupAuthorizedOperations is a described group's AuthorizedOperations:
// the group operations req's principal may perform when the request asks
// for them, else INT32_MIN (not asked), as DescribeGroups,
// ConsumerGroupDescribe and ShareGroupDescribe all answer.
func (h *Handlers) groupAuthorizedOperations(req *protocol.Request, include bool, id string) int32 {
	if include {
		return h.authorizedOperations(req, acl.ResourceGroup, id)
	}
	return math.MinInt32
}

func (h *Handlers) registerDescribeGroups(reg *protocol.Registry) {
	reg.Register(15, 0, 5, h.describeGroups)
}

func (h *Handlers) describeGroups(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c := h.coordinator()
	for _, id := range r.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = h.groupAuthorizedOperations(req, r.IncludeAuthorizedOperations, id)
		if !h.authorize(req, acl.OpDescribe, acl.ResourceGroup, id) {
			rg.AuthorizedOperations = authzOff
			rg.ErrorCode = errorCode(errGroupAuthorization)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if c == nil {
			rg.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		s, err := c.DescribeGroup(id)
		if err != nil {
			rg.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.ProtocolType, rg.Protocol = s.State.String(), s.ProtocolType, s.Protocol
		for _, m := range s.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			if rm.ProtocolMetadata == nil {
				rm.ProtocolMetadata = []byte{}
			}
			if rm.MemberAssignment == nil {
				rm.MemberAssignment = []byte{}
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

package handlers

// DescribeGroups (key 15), v0-v5.
//
// A group this coordinator does not know is described as Dead with no
// error (GROUP_ID_NOT_FOUND is v6+). Member metadata, assignments and the
// protocol are reported only for a Stable group, as Kafka does. v3 may ask
// for the authorized operations: with no authorizer every group operation
// (READ, DELETE, DESCRIBE) is allowed. v4 adds group.instance.id.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

// groupOperations is the ACL operation bitfield of a group: READ (3),
// DELETE (6) and DESCRIBE (8).
const groupOperations = 1<<3 | 1<<6 | 1<<8

// groupAuthorizedOperations is a described group's AuthorizedOperations:
// groupOperations when the request asks for them, else INT32_MIN (not
// asked), as DescribeGroups, ConsumerGroupDescribe and ShareGroupDescribe
// all answer.
func groupAuthorizedOperations(include bool) int32 {
	if include {
		return groupOperations
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
		rg.AuthorizedOperations = groupAuthorizedOperations(r.IncludeAuthorizedOperations)
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

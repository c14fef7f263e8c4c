package handlers

// ShareGroupDescribe (key 77), v1.
//
// Describes share groups this broker coordinates: state Empty or Stable,
// the group epoch (also reported as the assignment epoch: the assignment
// follows every membership change at once), the "simple" assignor, and
// each member with its subscriptions and assignment. An unknown group is
// GROUP_ID_NOT_FOUND; a group coordinated elsewhere NOT_COORDINATOR.
//
// Authorization (authz.go): DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShareGroupDescribe(reg *protocol.Registry) {
	reg.Register(77, 1, 1, h.shareGroupDescribe)
}

func (h *Handlers) shareGroupDescribe(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	im := h.meta.Image()
	for _, id := range r.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		rg.AuthorizedOperations = h.groupAuthorizedOperations(req, r.IncludeAuthorizedOperations, id)
		if !h.authorize(req, acl.OpDescribe, acl.ResourceGroup, id) {
			rg.AuthorizedOperations = authzOff
			rg.ErrorCode = errorCode(errGroupAuthorization)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if !h.shareReady() {
			rg.ErrorCode = errorCode(share.ErrCoordinatorUnavailable)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := h.shareCoord.Describe(id)
		if err != nil {
			rg.ErrorCode = errorCode(err)
			rg.ErrorMessage = errorMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = d.State, d.Epoch, d.Epoch, "simple"
		for _, m := range d.Members {
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID, rm.RackID, rm.MemberEpoch = m.ID, m.Rack, m.Epoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopicNames = m.Subscribed
			for _, t := range sortedKeys(m.Assignment) {
				ti := im.Topic(t)
				if ti == nil {
					continue
				}
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = ti.ID, t, m.Assignment[t]
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

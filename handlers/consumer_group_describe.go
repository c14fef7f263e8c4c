package handlers

// ConsumerGroupDescribe (key 69), v0-v1 (KIP-848).
//
// Describes consumer-protocol groups: state (Empty, Assigning,
// Reconciling, Stable), group epoch, target assignment epoch, the
// assignor, and each member's epoch, subscription, current and target
// assignment. A group that does not exist, or is a classic group, answers
// GROUP_ID_NOT_FOUND. v1 adds the member type: 1 for a member using the
// consumer protocol, 0 for a classic member inside the group (KIP-848's
// online migration).
//
// Authorization (authz.go): DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerConsumerGroupDescribe(reg *protocol.Registry) {
	reg.Register(69, 0, 1, h.consumerGroupDescribe)
}

func sortedTopicIDs(m map[cluster.TopicID][]int32) []cluster.TopicID {
	ids := make([]cluster.TopicID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b cluster.TopicID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

func describedAssignment(m map[cluster.TopicID][]int32, view *group.TopicsView) kmsg.Assignment {
	a := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, id := range sortedTopicIDs(m) {
		a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: id, Topic: view.Name(id), Partitions: m[id]})
	}
	return a
}

func (h *Handlers) consumerGroupDescribe(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	c := h.coordinator()
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	for _, id := range r.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
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
		d, view, err := c.DescribeConsumerGroup(id)
		if err != nil {
			rg.ErrorCode = errorCode(err)
			if err == group.ErrGroupIDNotFound {
				msg := "Group " + id + " not found."
				rg.ErrorMessage = &msg
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State.String(), d.Epoch, d.AssignmentEpoch, d.AssignorName
		rg.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics, rm.SubscribedTopicRegex = m.TopicNames, m.TopicRegex
			rm.Assignment = describedAssignment(m.Assignment, view)
			rm.TargetAssignment = describedAssignment(m.TargetAssigned, view)
			rm.MemberType = 1
			if m.Classic {
				rm.MemberType = 0
			}
			rg.Members = append(rg.Members, rm)
		}
		if refused := undescribableTopics(rg.Members, describe); len(refused) > 0 {
			// Kafka describes a group only to who may describe every
			// topic its members subscribe to or are assigned.
			err := fmt.Errorf("%w: the group's members use topics %v the client may not describe", errTopicAuthorization, refused)
			rg = kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.AuthorizedOperations = id, authzOff
			rg.ErrorCode, rg.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// undescribableTopics returns the topics the members subscribe to or are
// assigned that describe refuses, sorted.
func undescribableTopics(members []kmsg.ConsumerGroupDescribeResponseGroupMember, describe func(string) bool) []string {
	refused := map[string]bool{}
	check := func(t string) {
		if t != "" && !describe(t) {
			refused[t] = true
		}
	}
	for _, m := range members {
		for _, t := range m.SubscribedTopics {
			check(t)
		}
		for _, a := range [2]kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				check(tp.Topic)
			}
		}
	}
	return slices.Sorted(maps.Keys(refused))
}

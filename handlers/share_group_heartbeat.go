package handlers

// ShareGroupHeartbeat (key 76), v1 (v0 was Kafka 4.0's early access).
//
// Joins (member epoch 0), heartbeats and leaves (-1) a share group on its
// coordinator, the broker that would coordinate a classic group of that
// id. The member id is the client's own (a UUID, at most 36 characters).
// The assignment, sent with a full heartbeat (subscriptions present) or
// when the member's epoch moves, gives every member every partition of the
// topics it subscribes to; see share/group.go.
//
// Authorization (authz.go), as Kafka's: READ on the group
// (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every subscribed topic
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShareGroupHeartbeat(reg *protocol.Registry) {
	reg.Register(76, 1, 1, h.shareGroupHeartbeat)
}

func (h *Handlers) shareGroupHeartbeat(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if !h.shareReady() {
		resp.ErrorCode = errorCode(share.ErrCoordinatorUnavailable)
		return resp, nil
	}
	if err := h.authorizeMember(req, r.GroupID, r.SubscribedTopicNames); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if r.MemberEpoch == 0 && h.isClassicGroup(r.GroupID) {
		// One id, one group type: Kafka refuses a share member in a
		// classic group's id.
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = strPtr("group " + r.GroupID + " is not a share group")
		return resp, nil
	}
	res, interval := h.shareCoord.Heartbeat(r.GroupID, share.HeartbeatRequest{
		MemberID:    r.MemberID,
		MemberEpoch: r.MemberEpoch,
		Rack:        r.RackID,
		Subscribed:  r.SubscribedTopicNames,
		ClientID:    req.ClientID,
		ClientHost:  clientHost(req),
	})
	resp.HeartbeatIntervalMillis = interval
	if res.Err != nil {
		resp.ErrorCode = errorCode(res.Err)
		resp.ErrorMessage = errorMessage(res.Err)
		return resp, nil
	}
	resp.MemberID = &r.MemberID
	resp.MemberEpoch = res.MemberEpoch
	if res.Assignment != nil {
		im := h.meta.Image()
		a := new(kmsg.ShareGroupHeartbeatResponseAssignment)
		for _, t := range sortedKeys(res.Assignment) {
			ti := im.Topic(t)
			if ti == nil {
				continue
			}
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID = ti.ID
			tp.Partitions = res.Assignment[t]
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = a
	}
	return resp, nil
}

func sortedKeys(m map[string][]int32) []string { return slices.Sorted(maps.Keys(m)) }

package handlers

// ConsumerGroupHeartbeat (key 68), v0-v1 (KIP-848).
//
// The consumer group protocol's only membership request: a member joins
// with epoch 0, heartbeats with its member epoch, leaves with -1 (or -2, a
// static member leaving for now). Fields left null are unchanged since the
// member's last heartbeat; the answer carries the member's epoch and, when
// it changed or was asked for in full, its assignment by topic id. The
// assignment is computed by the coordinator (ServerAssignor "uniform",
// the default, or "range"). v1 (Kafka 4.0) adds SubscribedTopicRegex,
// matched against whole topic names, and requires the client to choose
// its member id; v0 members joining without one get one from the broker.
//
// Authorization (authz.go), as Kafka's: READ on the group
// (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every subscribed topic name
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerConsumerGroupHeartbeat(reg *protocol.Registry) {
	reg.Register(68, 0, 1, h.consumerGroupHeartbeat)
}

func (h *Handlers) consumerGroupHeartbeat(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if h.refuseShareGroupConsumer(r.Group, resp) {
		return resp, nil
	}
	if err := h.authorizeMember(req, r.Group, r.SubscribedTopicNames); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	c := h.coordinator()
	if c == nil {
		resp.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
		return resp, nil
	}
	p := group.ConsumerHeartbeat{
		Version:            req.Version,
		MemberID:           r.MemberID,
		MemberEpoch:        r.MemberEpoch,
		InstanceID:         r.InstanceID,
		RackID:             r.RackID,
		RebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		TopicNames:         r.SubscribedTopicNames,
		ServerAssignor:     r.ServerAssignor,
		ClientHost:         clientHost(req),
	}
	if req.Version >= 1 {
		p.TopicRegex = r.SubscribedTopicRegex
	}
	p.ClientID = req.ClientID
	if r.Topics != nil {
		p.Owned = make(map[cluster.TopicID][]int32, len(r.Topics))
		for _, t := range r.Topics {
			p.Owned[t.TopicID] = append(p.Owned[t.TopicID], t.Partitions...)
		}
	}
	res := c.ConsumerGroupHeartbeat(r.Group, p)
	resp.ErrorCode = errorCode(res.Err)
	if res.Err != nil {
		if res.ErrMessage != "" {
			resp.ErrorMessage = &res.ErrMessage
		}
		resp.MemberEpoch = -1
		return resp, nil
	}
	resp.MemberID = &res.MemberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = res.HeartbeatIntervalMs
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, id := range sortedTopicIDs(res.Assignment) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, res.Assignment[id]
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

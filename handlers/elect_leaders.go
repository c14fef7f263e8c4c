package handlers

// ElectLeaders (key 43, v0-v2), KIP-460.
//
// PREFERRED (0) moves each partition's leadership to its first replica
// when that replica is live and in the ISR; UNCLEAN (1) elects a leader
// for a partition without one, from the ISR, the ELR (KIP-966), or any
// live replica (cluster/reassign.go). Per partition:
// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. Null topics
// mean every partition, and the answer then leaves out the partitions
// that needed no election. v0 has no election type (PREFERRED) and no
// top-level error code.
//
// Authorization (authz.go): ALTER on the cluster; refused, every
// partition answers CLUSTER_AUTHORIZATION_FAILED (and v1+ the top level),
// as in Kafka.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerElectLeaders(reg *protocol.Registry) {
	if h.ctrl == nil {
		return
	}
	reg.Register(43, 0, 2, h.electLeaders)
}

func (h *Handlers) electLeaders(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := cluster.ElectionType(r.ElectionType)
	if req.Version == 0 {
		typ = cluster.ElectPreferred
	}
	var parts map[string][]int32
	if r.Topics != nil {
		parts = map[string][]int32{}
		for _, t := range r.Topics {
			parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
		}
	}
	answerAll := func(err error) {
		resp.ErrorCode = errorCode(err)
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !h.authorizeCluster(req, acl.OpAlter) {
		answerAll(errClusterAuthorization)
		return resp, nil
	}
	results, err := h.ctrl.ElectLeaders(ctx, typ, parts)
	if err != nil {
		if errorCode(err) == kerr.NotController.Code && !cluster.IsForwarded(req.ClientID) {
			err = kerr.RequestTimedOut
		}
		answerAll(err)
		return resp, nil
	}
	elected := false
	for _, res := range results {
		elected = elected || res.Err == nil
	}
	if elected {
		h.awaitPropagation(ctx, req, time.Duration(r.TimeoutMillis)*time.Millisecond)
	}
	var cur *kmsg.ElectLeadersResponseTopic
	for _, res := range results {
		if cur == nil || cur.Topic != res.Topic {
			resp.Topics = append(resp.Topics, kmsg.NewElectLeadersResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = res.Topic
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = res.Partition
		rp.ErrorCode, rp.ErrorMessage = errorCode(res.Err), errorMessage(res.Err)
		cur.Partitions = append(cur.Partitions, rp)
	}
	return resp, nil
}

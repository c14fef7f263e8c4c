package handlers

// AlterPartitionReassignments (key 45, v0-v1) and
// ListPartitionReassignments (key 46, v0), KIP-455.
//
// Alter starts a reassignment of each named partition to its target
// replicas, or cancels the one in progress for a null replica list; the
// active controller carries it out (cluster/reassign.go). Per partition:
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty list,
// duplicate or unregistered broker), NO_REASSIGNMENT_IN_PROGRESS (a
// cancel with nothing to cancel). v1's AllowReplicationFactorChange=false
// refuses a target whose size differs from the current replica count
// (INVALID_REPLICATION_FACTOR), as Kafka does. List answers the
// reassignments in progress, of every partition or of those named.
//
// Authorization (authz.go): ALTER on the cluster for Alter, DESCRIBE on
// the cluster for List (CLUSTER_AUTHORIZATION_FAILED at the top level),
// as in Kafka.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerReassignments(reg *protocol.Registry) {
	if h.ctrl == nil {
		return
	}
	reg.Register(45, 0, 1, h.alterPartitionReassignments)
	reg.Register(46, 0, 0, h.listPartitionReassignments)
}

func (h *Handlers) alterPartitionReassignments(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !h.authorizeCluster(req, acl.OpAlter) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		resp.ErrorMessage = errorMessage(errClusterAuthorization)
		return resp, nil
	}
	im := h.meta.Image()
	var reqs []cluster.Reassignment
	type slot struct{ t, p int }
	var slots []slot
	for ti, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if req.Version >= 1 && !r.AllowReplicationFactorChange && p.Replicas != nil {
				if cur := im.Partition(t.Topic, p.Partition); cur != nil && len(cur.TargetReplicas()) != len(p.Replicas) {
					err := fmt.Errorf("%w: the replication factor of %s-%d would change from %d to %d", cluster.ErrInvalidReplicationFactor,
						t.Topic, p.Partition, len(cur.TargetReplicas()), len(p.Replicas))
					rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
			}
			reqs = append(reqs, cluster.Reassignment{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas})
			slots = append(slots, slot{ti, len(rt.Partitions)})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(reqs) == 0 {
		return resp, nil
	}
	errs := h.ctrl.AlterPartitionReassignments(ctx, reqs)
	if anyNil(errs) {
		h.awaitPropagation(ctx, req, time.Duration(r.TimeoutMillis)*time.Millisecond)
	}
	for i, err := range errs {
		if errorCode(err) == kerr.NotController.Code && cluster.IsForwarded(req.ClientID) {
			// The forwarding node retries the whole request elsewhere.
			resp.ErrorCode = kerr.NotController.Code
			return resp, nil
		}
		rp := &resp.Topics[slots[i].t].Partitions[slots[i].p]
		rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
	}
	return resp, nil
}

func (h *Handlers) listPartitionReassignments(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !h.authorizeCluster(req, acl.OpDescribe) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		resp.ErrorMessage = errorMessage(errClusterAuthorization)
		return resp, nil
	}
	var filter map[string][]int32
	if r.Topics != nil {
		filter = map[string][]int32{}
		for _, t := range r.Topics {
			// A topic named with no partitions lists none of them, as
			// Kafka answers it.
			filter[t.Topic] = append(filter[t.Topic], t.Partitions...)
			if filter[t.Topic] == nil {
				filter[t.Topic] = []int32{}
			}
		}
	}
	var cur *kmsg.ListPartitionReassignmentsResponseTopic
	for _, st := range h.meta.Image().Reassignments(filter) {
		if cur == nil || cur.Topic != st.Topic {
			resp.Topics = append(resp.Topics, kmsg.NewListPartitionReassignmentsResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = st.Topic
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition = st.Partition
		p.Replicas = st.Replicas
		p.AddingReplicas = nonNil(st.AddingReplicas)
		p.RemovingReplicas = nonNil(st.RemovingReplicas)
		cur.Partitions = append(cur.Partitions, p)
	}
	return resp, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

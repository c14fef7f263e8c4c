package handlers

// CreatePartitions (key 37), v0-v3.
//
// Grows a topic to Count partitions; fewer or equal counts get
// INVALID_PARTITIONS. Explicit assignments for the new partitions are
// checked like CreateTopics' (INVALID_REPLICA_ASSIGNMENT). A topic named
// twice fails with INVALID_REQUEST. ValidateOnly checks without creating.
//
// Authorization (authz.go): ALTER on each topic
// (TOPIC_AUTHORIZATION_FAILED), as in Kafka. The answer comes once every live broker has the new partitions
// (propagate.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerCreatePartitions(reg *protocol.Registry) {
	reg.Register(37, 0, 3, h.createPartitions)
}

func (h *Handlers) createPartitions(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	changed := false
	defer func() {
		if changed {
			h.awaitPropagation(ctx, req, time.Duration(r.TimeoutMillis)*time.Millisecond)
		}
	}()
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		if count[t.Topic] > 1 {
			rt.ErrorCode = kerr.InvalidRequest.Code
			msg := "duplicate topic in request: " + t.Topic
			rt.ErrorMessage = &msg
		} else if !h.authorize(req, acl.OpAlter, acl.ResourceTopic, t.Topic) {
			rt.ErrorCode = errorCode(errTopicAuthorization)
			rt.ErrorMessage = errorMessage(errTopicAuthorization)
		} else {
			var assignment [][]int32
			for _, a := range t.Assignment {
				assignment = append(assignment, a.Replicas)
			}
			err := h.meta.CreatePartitions(ctx, t.Topic, t.Count, assignment, r.ValidateOnly)
			changed = changed || err == nil && !r.ValidateOnly
			rt.ErrorCode = errorCode(err)
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

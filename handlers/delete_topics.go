package handlers

// DeleteTopics (key 20), v0-v6.
//
// Topics are named by name, or from v6 by name or id. Deleting a topic
// removes it from the metadata and then every broker drops its logs.
// Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID;
// with delete.topic.enable off, TOPIC_DELETION_DISABLED. The answer comes
// once every live broker has dropped the topic (propagate.go).
//
// Authorization (authz.go), as Kafka's: DELETE on each topic
// (TOPIC_AUTHORIZATION_FAILED); a topic named by id also needs DESCRIBE,
// without which its name is not answered.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDeleteTopics(reg *protocol.Registry) {
	reg.Register(20, 0, 6, h.deleteTopics)
}

func (h *Handlers) deleteTopics(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	im := h.meta.Image()

	type item struct {
		name *string
		id   [16]byte
	}
	var items []item
	if req.Version >= 6 {
		for _, t := range r.Topics {
			items = append(items, item{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range r.TopicNames {
			items = append(items, item{name: &n})
		}
	}
	deleteAllowed := h.topicAuthorizer(req, acl.OpDelete)
	var names []string
	var idx []int
	for i, it := range items {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = it.name, it.id
		resp.Topics = append(resp.Topics, rt)
		if it.name == nil || *it.name == "" {
			t := im.TopicByID(cluster.TopicID(it.id))
			if t == nil {
				resp.Topics[i].ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			name := t.Name
			if !h.authorize(req, acl.OpDescribe, acl.ResourceTopic, name) {
				// A topic named by id keeps its name from who may
				// not describe it, as Kafka answers.
				resp.Topics[i].Topic = nil
				resp.Topics[i].ErrorCode = errorCode(errTopicAuthorization)
				continue
			}
			resp.Topics[i].Topic = &name
			if !deleteAllowed(name) {
				resp.Topics[i].ErrorCode = errorCode(errTopicAuthorization)
				continue
			}
			names = append(names, name)
		} else {
			if !deleteAllowed(*it.name) {
				resp.Topics[i].ErrorCode = errorCode(errTopicAuthorization)
				continue
			}
			if t := im.Topics[*it.name]; t != nil {
				resp.Topics[i].TopicID = t.ID
			}
			names = append(names, *it.name)
		}
		idx = append(idx, i)
	}
	errs := h.meta.DeleteTopics(ctx, names)
	if anyNil(errs) {
		h.awaitPropagation(ctx, req, time.Duration(r.TimeoutMillis)*time.Millisecond)
	}
	for j, err := range errs {
		rt := &resp.Topics[idx[j]]
		rt.ErrorCode = errorCode(err)
		if req.Version >= 5 {
			rt.ErrorMessage = errorMessage(err)
		}
	}
	return resp, nil
}

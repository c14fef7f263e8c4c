package handlers

// CreateTopics (key 19), v0-v7.
//
// Validation is the controller's: names (INVALID_TOPIC_EXCEPTION), counts
// (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR), explicit assignments
// (INVALID_REPLICA_ASSIGNMENT), configs (INVALID_CONFIG), existing topics
// (TOPIC_ALREADY_EXISTS). A name given twice in one request fails both
// copies with INVALID_REQUEST, as Kafka does. -1 partitions or replication
// factor (v4+) take the broker defaults. The answer comes only after every
// new partition has a leader serving it, so a client can produce at once,
// and every live broker knows the topic (propagate.go).
// v5+ answers with the topic's partition count, replication factor and
// effective configs; v7+ with its id. ValidateOnly checks without creating.
//
// Authorization (authz.go), as Kafka's: CREATE on the cluster, or on each
// topic (TOPIC_AUTHORIZATION_FAILED); the created topic's configs (v5+)
// only with DESCRIBE_CONFIGS on it, else its config error is
// TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerCreateTopics(reg *protocol.Registry) {
	reg.Register(19, 0, 7, h.createTopics)
}

func (h *Handlers) createTopics(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)

	count := map[string]int{}
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	create := func(string) bool { return true }
	if h.authz != nil && !h.authorizeCluster(req, acl.OpCreate) {
		create = h.topicAuthorizer(req, acl.OpCreate)
	}
	var specs []cluster.TopicSpec
	var specIdx []int
	for i, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		resp.Topics = append(resp.Topics, rt)
		if count[t.Topic] > 1 {
			resp.Topics[i].ErrorCode = kerr.InvalidRequest.Code
			if req.Version >= 1 {
				msg := "create topics request contains a duplicate topic: " + t.Topic
				resp.Topics[i].ErrorMessage = &msg
			}
			continue
		}
		if !create(t.Topic) {
			resp.Topics[i].ErrorCode = errorCode(errTopicAuthorization)
			if req.Version >= 1 {
				resp.Topics[i].ErrorMessage = strPtr("Authorization failed.")
			}
			continue
		}
		spec := cluster.TopicSpec{Name: t.Topic, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
		if len(t.ReplicaAssignment) > 0 {
			sorted := append([]kmsg.CreateTopicsRequestTopicReplicaAssignment(nil), t.ReplicaAssignment...)
			sort.Slice(sorted, func(a, b int) bool { return sorted[a].Partition < sorted[b].Partition })
			ok := true
			for j, a := range sorted {
				if a.Partition != int32(j) {
					ok = false
					break
				}
				spec.Assignment = append(spec.Assignment, a.Replicas)
			}
			if !ok {
				resp.Topics[i].ErrorCode = kerr.InvalidReplicaAssignment.Code
				continue
			}
		}
		var floorErr error
		if len(t.Configs) > 0 {
			spec.Configs = make(map[string]*string, len(t.Configs))
			for _, c := range t.Configs {
				spec.Configs[c.Name] = c.Value
				if err := checkClientConfig(c.Name, c.Value); err != nil && floorErr == nil {
					floorErr = err
				}
			}
		}
		if floorErr != nil {
			resp.Topics[i].ErrorCode = errorCode(floorErr)
			if req.Version >= 1 {
				resp.Topics[i].ErrorMessage = errorMessage(floorErr)
			}
			continue
		}
		specs = append(specs, spec)
		specIdx = append(specIdx, i)
	}

	errs := h.meta.CreateTopics(ctx, specs, r.ValidateOnly)
	if !r.ValidateOnly && anyNil(errs) {
		h.awaitPropagation(ctx, req, time.Duration(r.TimeoutMillis)*time.Millisecond)
	}
	im := h.meta.Image()
	bd := h.meta.BrokerDefaults()
	for j, err := range errs {
		rt := &resp.Topics[specIdx[j]]
		rt.ErrorCode = errorCode(err)
		if req.Version >= 1 {
			rt.ErrorMessage = errorMessage(err)
		}
		if err != nil || req.Version < 5 {
			continue
		}
		t := im.Topics[rt.Topic]
		if t == nil {
			// validate only: describe what would have been created.
			spec := specs[j]
			rt.NumPartitions, rt.ReplicationFactor = spec.NumPartitions, spec.ReplicationFactor
			if len(spec.Assignment) > 0 {
				rt.NumPartitions, rt.ReplicationFactor = int32(len(spec.Assignment)), int16(len(spec.Assignment[0]))
			}
			continue
		}
		rt.TopicID = t.ID
		rt.NumPartitions = int32(len(t.Partitions))
		rt.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		if !h.authorize(req, acl.OpDescribeConfigs, acl.ResourceTopic, t.Name) {
			// Kafka returns the configs only to who may describe them.
			rt.ConfigErrorCode = errorCode(errTopicAuthorization)
			continue
		}
		for _, cv := range cluster.EffectiveTopicConfigs(im, t, h.cfg.NodeID, bd) {
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			rc.Name = cv.Name
			v := cv.Value
			rc.Value = &v
			rc.Source = int8(cv.Source)
			rc.ReadOnly = cv.ReadOnly
			rc.IsSensitive = cv.Sensitive
			rt.Configs = append(rt.Configs, rc)
		}
	}
	return resp, nil
}

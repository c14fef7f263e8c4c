package handlers

// Metadata (key 3), v0-v12.
//
// A null topic list means all topics; an empty list means none (v1+; v0's
// empty list meant all). Topics may be named by id from v10 on. Unknown
// topics are created when the broker's auto.create.topics.enable is on and
// the request allows it (always below v4, AllowAutoTopicCreation from v4);
// creation is synchronous, so the new topic is answered with its leaders.
// Internal topics are not auto-created here. The cluster id is reported
// from v2, the controller id from v1, leader epochs from v7, topic ids from
// v10.
//
// Authorization (authz.go), as Kafka's: a topic needs DESCRIBE; one the
// client may not describe is left out of an all-topics answer and
// answered TOPIC_AUTHORIZATION_FAILED when named (by id: without its
// name). Auto-creating a topic needs CREATE on the cluster or on the
// topic (else TOPIC_AUTHORIZATION_FAILED). Authorized operations
// (KIP-430) are filled when asked: the cluster's (v8-v10, 0 without
// DESCRIBE on the cluster) and each topic's.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerMetadata(reg *protocol.Registry) {
	reg.Register(3, 0, 12, h.metadata)
}

func (h *Handlers) metadata(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	im := h.meta.Image()

	allowAuto := req.Version < 4 || r.AllowAutoTopicCreation
	all := r.Topics == nil || (req.Version == 0 && len(r.Topics) == 0)

	type wanted struct {
		name string
		id   cluster.TopicID
		err  int16
	}
	var topics []wanted
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	if all {
		for _, n := range im.TopicNames() {
			// Kafka leaves out, silently, the topics a client may not
			// describe.
			if describe(n) {
				topics = append(topics, wanted{name: n})
			}
		}
	} else {
		var create []cluster.TopicSpec
		createAllowed := func(string) bool { return true }
		if allowAuto && h.cfg.AutoCreateTopics && h.authz != nil {
			if !h.authorizeCluster(req, acl.OpCreate) {
				createAllowed = h.topicAuthorizer(req, acl.OpCreate)
			}
		}
		for _, t := range r.Topics {
			if t.Topic == nil || *t.Topic == "" {
				id := cluster.TopicID(t.TopicID)
				if ti := im.TopicByID(id); ti == nil {
					topics = append(topics, wanted{id: id, err: kerr.UnknownTopicID.Code})
				} else if !describe(ti.Name) {
					// Topic ids are not secret: Kafka answers them with
					// the error, without the name.
					topics = append(topics, wanted{id: id, err: errorCode(errTopicAuthorization)})
				} else {
					topics = append(topics, wanted{name: ti.Name})
				}
				continue
			}
			name := *t.Topic
			if !describe(name) {
				topics = append(topics, wanted{name: name, err: errorCode(errTopicAuthorization)})
				continue
			}
			if im.Topics[name] == nil {
				if err := cluster.ValidateTopicName(name); err != nil {
					topics = append(topics, wanted{name: name, err: kerr.InvalidTopicException.Code})
					continue
				}
				if allowAuto && h.cfg.AutoCreateTopics {
					if !createAllowed(name) {
						topics = append(topics, wanted{name: name, err: errorCode(errTopicAuthorization)})
						continue
					}
					create = append(create, cluster.TopicSpec{Name: name, NumPartitions: -1, ReplicationFactor: -1})
				}
			}
			topics = append(topics, wanted{name: name})
		}
		if len(create) > 0 {
			errs := h.meta.CreateTopics(ctx, create, false)
			for i, err := range errs {
				if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
					req.Logger().Warn().Err(err).Str("topic", create[i].Name).Msg("auto-creating topic failed")
				}
			}
			if anyNil(errs) {
				// As for CreateTopics: the answer names leaders that
				// already serve the new topic (propagate.go).
				h.awaitPropagation(ctx, req, autoCreatePropagationTimeout)
			}
			im = h.meta.Image()
		}
	}
	if req.Version >= 8 && req.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if h.authorizeCluster(req, acl.OpDescribe) {
			resp.AuthorizedOperations = h.authorizedOperations(req, acl.ResourceCluster, acl.ClusterName)
		}
	}

	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		host, port := endpoint(b, req.Conn)
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: b.NodeID, Host: host, Port: port, Rack: b.Rack})
	}
	if req.Version >= 2 {
		cid := im.ClusterID
		resp.ClusterID = &cid
	}
	resp.ControllerID = h.controllerID(im)

	for _, w := range topics {
		rt := kmsg.NewMetadataResponseTopic()
		if w.name != "" {
			name := w.name
			rt.Topic = &name
		}
		rt.TopicID = w.id
		rt.ErrorCode = w.err
		if w.err == 0 {
			t := im.Topics[w.name]
			if t == nil {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rt.TopicID = t.ID
				rt.IsInternal = t.Internal()
				if req.Version >= 8 && r.IncludeTopicAuthorizedOperations {
					rt.AuthorizedOperations = h.authorizedOperations(req, acl.ResourceTopic, t.Name)
				}
				for _, p := range t.Partitions {
					rp := kmsg.NewMetadataResponseTopicPartition()
					rp.Partition = p.Partition
					rp.Leader = p.Leader
					rp.LeaderEpoch = p.LeaderEpoch
					rp.Replicas = p.Replicas
					rp.ISR = p.ISR
					for _, rid := range p.Replicas {
						if cluster.ReplicaOffline(im, &p, rid) {
							rp.OfflineReplicas = append(rp.OfflineReplicas, rid)
						}
					}
					if p.Leader < 0 {
						rp.ErrorCode = kerr.LeaderNotAvailable.Code
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

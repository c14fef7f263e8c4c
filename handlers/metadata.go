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

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	if all {
		for _, n := range im.TopicNames() {
			topics = append(topics, wanted{name: n})
		}
	} else {
		var create []cluster.TopicSpec
		for _, t := range r.Topics {
			if t.Topic == nil || *t.Topic == "" {
				id := cluster.TopicID(t.TopicID)
				if ti := im.TopicByID(id); ti != nil {
					topics = append(topics, wanted{name: ti.Name})
				} else {
					topics = append(topics, wanted{id: id, err: kerr.UnknownTopicID.Code})
				}
				continue
			}
			name := *t.Topic
			if im.Topics[name] == nil {
				if err := cluster.ValidateTopicName(name); err != nil {
					topics = append(topics, wanted{name: name, err: kerr.InvalidTopicException.Code})
					continue
				}
				if allowAuto && h.cfg.AutoCreateTopics {
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
	resp.ControllerID = im.ControllerID

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

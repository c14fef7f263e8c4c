package handlers

// WriteTxnMarkers (key 27), v0-v1: from a transaction coordinator on
// another broker, the commit or abort markers for partitions this broker
// leads. Each marker is appended with acks=all and answered per partition
// (NOT_LEADER_OR_FOLLOWER when leadership moved, so the coordinator
// retries with the new leader). A marker in __consumer_offsets also
// decides the group's transactional offset commits. Clients' Produce can
// never write control batches; this is the only way in.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, else every
// partition answers CLUSTER_AUTHORIZATION_FAILED, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/txn"
)

func (h *Handlers) registerWriteTxnMarkers(reg *protocol.Registry) {
	reg.Register(27, 0, 1, h.writeTxnMarkers)
}

func (h *Handlers) writeTxnMarkers(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	// At most produceWorkers markers are written at once; a panic in one
	// is the handler's (protocol.Group).
	g := protocol.NewGroup(produceWorkers)
	clusterOK := h.authorizeCluster(req, acl.OpClusterAction)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(r.Markers))
	for mi, m := range r.Markers {
		rm := &resp.Markers[mi]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for ti, t := range m.Topics {
			rt := &rm.Topics[ti]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for pi, p := range t.Partitions {
				rp := &rt.Partitions[pi]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if !clusterOK {
					rp.ErrorCode = errorCode(errClusterAuthorization)
					continue
				}
				if h.txn == nil {
					rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
					continue
				}
				g.Go(func() {
					tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
					rp.ErrorCode = errorCode(h.txn.ApplyMarker(ctx, tp, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed))
				})
			}
		}
	}
	g.Wait()
	return resp, nil
}

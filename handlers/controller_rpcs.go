package handlers

// Broker-to-controller RPCs, served on the active controller's broker
// listener: BrokerRegistration (key 62, v0-v4), BrokerHeartbeat (key 63,
// v0-v1), AlterPartition (key 56, v0-v3), AllocateProducerIds (key 67,
// v0) and AssignReplicasToDirs (key 73, v0). Only gokafka nodes send
// them. A node that does not lead the metadata quorum answers
// NOT_CONTROLLER to a forwarded request rather than forwarding it again.
//
// AlterPartition names topics by name up to v1 and by id from v2; v3
// carries the new ISR with broker epochs, which the controller checks
// against the brokers' registrations (KIP-903).

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerControllerRPCs(reg *protocol.Registry) {
	reg.Register(56, 0, 3, h.alterPartition)
	if c := h.ctrl; c != nil {
		reg.Register(62, 0, 4, func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
			return h.brokerRegistration(ctx, c, req)
		})
		reg.Register(63, 0, 1, func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
			return h.brokerHeartbeat(ctx, c, req)
		})
		reg.Register(73, 0, 0, func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
			return h.assignReplicasToDirs(ctx, c, req)
		})
		reg.Register(67, 0, 0, func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
			r := req.Body.(*kmsg.AllocateProducerIDsRequest)
			resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
			start, n, err := c.AllocateProducerIDs(ctx, r.BrokerID)
			resp.ErrorCode = errorCode(err)
			resp.ProducerIDStart, resp.ProducerIDLen = start, n
			return resp, nil
		})
	}
}

func (h *Handlers) brokerRegistration(ctx context.Context, c Controller, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.BrokerRegistrationRequest)
	resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	if isObserverJoin(r) {
		// A broker-only node asking to follow the metadata log.
		l := r.Listeners[0]
		resp.ErrorCode = errorCode(c.JoinObserver(ctx, r.BrokerID, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))))
		resp.BrokerEpoch = -1
		return resp, nil
	}
	if cid := h.meta.Image().ClusterID; r.ClusterID != "" && r.ClusterID != cid {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	if len(r.Listeners) == 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	// The first listener is where the other nodes reach the broker; the
	// others are its client listeners by name.
	l := r.Listeners[0]
	var eps []cluster.Endpoint
	for _, e := range r.Listeners[1:] {
		eps = append(eps, cluster.Endpoint{Name: e.Name, Host: e.Host, Port: int32(e.Port)})
	}
	err := c.RegisterBroker(ctx, cluster.BrokerInfo{
		NodeID: r.BrokerID, Host: l.Host, Port: int32(l.Port), Rack: r.Rack,
		Incarnation: cluster.IncarnationString(r.IncarnationID), LogDirs: dirIDs(r.LogDirs),
		PreviousEpoch: r.PreviousBrokerEpoch, Endpoints: eps,
	})
	resp.ErrorCode = errorCode(err)
	if b, ok := h.meta.Image().Brokers[r.BrokerID]; err == nil && ok && b.Incarnation == cluster.IncarnationString(r.IncarnationID) {
		resp.BrokerEpoch = b.Epoch
	}
	return resp, nil
}

func (h *Handlers) brokerHeartbeat(ctx context.Context, c Controller, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	c.NoteMetadataOffset(r.BrokerID, r.CurrentMetadataOffset)
	fenced, shutdown, err := c.BrokerHeartbeat(ctx, r.BrokerID, r.WantShutdown, r.OfflineLogDirs)
	resp.ErrorCode = errorCode(err)
	resp.IsFenced, resp.ShouldShutdown, resp.IsCaughtUp = fenced, shutdown, err == nil
	return resp, nil
}

func (h *Handlers) alterPartition(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterPartitionRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	im := h.meta.Image()
	// Every partition of the request is validated first, then all are
	// committed together (one metadata entry, cluster.AlterPartitions):
	// a broker rejoining thousands of ISRs after a restart sends them in
	// one request.
	var reqs []cluster.AlterPartitionRequest
	var slots []*kmsg.AlterPartitionResponseTopicPartition
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		name := t.Topic
		if req.Version >= 2 {
			if ti := im.TopicByID(cluster.TopicID(t.TopicID)); ti != nil {
				name = ti.Name
			} else {
				name = ""
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = p.Partition
			isr := p.NewISR
			var epochs []int64
			if req.Version >= 3 {
				isr = nil
				for _, e := range p.NewEpochISR {
					isr = append(isr, e.BrokerID)
					epochs = append(epochs, e.BrokerEpoch)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
			if name == "" {
				rt.Partitions[len(rt.Partitions)-1].ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			reqs = append(reqs, cluster.AlterPartitionRequest{
				BrokerID: r.BrokerID, Topic: name, Partition: p.Partition,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr, NewISREpochs: epochs,
			})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// The response partitions are in place now; point at the ones that
	// wait for an answer, in request order.
	for ti, t := range r.Topics {
		for pi := range t.Partitions {
			if rp := &resp.Topics[ti].Partitions[pi]; rp.ErrorCode == 0 {
				slots = append(slots, rp)
			}
		}
	}
	infos, errs := h.alterPartitions(ctx, reqs)
	for i, rp := range slots {
		code := alterPartitionErrorCode(errs[i])
		if code == kerr.NotController.Code {
			// The whole request goes to the new controller.
			resp.ErrorCode = code
			resp.Topics = nil
			return resp, nil
		}
		rp.ErrorCode = code
		info := infos[i]
		rp.LeaderID, rp.LeaderEpoch, rp.ISR, rp.PartitionEpoch = info.Leader, info.LeaderEpoch, info.ISR, info.PartitionEpoch
	}
	return resp, nil
}

// alterPartitions commits reqs together where the metadata can
// (cluster.Controller), one by one otherwise.
func (h *Handlers) alterPartitions(ctx context.Context, reqs []cluster.AlterPartitionRequest) ([]cluster.PartitionInfo, []error) {
	if b, ok := h.meta.(interface {
		AlterPartitions(context.Context, []cluster.AlterPartitionRequest) ([]cluster.PartitionInfo, []error)
	}); ok {
		return b.AlterPartitions(ctx, reqs)
	}
	infos, errs := make([]cluster.PartitionInfo, len(reqs)), make([]error, len(reqs))
	for i, r := range reqs {
		infos[i], errs[i] = h.meta.AlterPartition(ctx, r)
		if alterPartitionErrorCode(errs[i]) == kerr.NotController.Code {
			for j := i + 1; j < len(reqs); j++ {
				errs[j] = errs[i]
			}
			break
		}
	}
	return infos, errs
}

// isObserverJoin reports whether r asks to join the metadata quorum as an
// observer rather than to register a broker (cluster/membership.go): no
// cluster id and a single listener named cluster.ObserverListenerName.
func isObserverJoin(r *kmsg.BrokerRegistrationRequest) bool {
	return r.ClusterID == "" && len(r.Listeners) == 1 && r.Listeners[0].Name == cluster.ObserverListenerName
}

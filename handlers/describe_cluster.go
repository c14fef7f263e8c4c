package handlers

// DescribeCluster (key 60), v0-v1.
//
// Lists the registered brokers with the cluster and controller ids. Only
// the broker endpoint type (1) is served; asking for controllers (2, v1+)
// gets UNSUPPORTED_ENDPOINT_TYPE, as from a broker in Kafka.
//
// Authorization (authz.go), as Kafka's: anyone may describe the cluster;
// the cluster's authorized operations (KIP-430), when asked, are those of
// the principal, 0 without DESCRIBE on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDescribeCluster(reg *protocol.Registry) {
	reg.Register(60, 0, 1, h.describeCluster)
}

func (h *Handlers) describeCluster(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	im := h.meta.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = h.controllerID(im)
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		host, port := endpoint(b, req.Conn)
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: b.NodeID, Host: host, Port: port, Rack: b.Rack})
	}
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if h.authorizeCluster(req, acl.OpDescribe) {
			resp.ClusterAuthorizedOperations = h.authorizedOperations(req, acl.ResourceCluster, acl.ClusterName)
		}
	}
	return resp, nil
}

// controllerID is the controller id clients are told: the active
// controller, unless it is not a broker (a controller-only node, which
// clients cannot reach); then, as Kafka's brokers answer when the
// controllers are not brokers, a live broker (this one if it is live),
// which forwards the controller's requests. -1 while there is no active
// controller.
func (h *Handlers) controllerID(im *cluster.Image) int32 {
	if _, ok := im.Brokers[im.ControllerID]; ok || im.ControllerID < 0 {
		return im.ControllerID
	}
	if b, ok := im.Brokers[h.cfg.NodeID]; ok && !b.Fenced {
		return h.cfg.NodeID
	}
	for _, id := range im.BrokerIDs() {
		if !im.Brokers[id].Fenced {
			return id
		}
	}
	return im.ControllerID
}

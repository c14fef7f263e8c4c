package handlers

// Cluster membership APIs (cluster/membership.go).
//
// UnregisterBroker (key 64, v0) removes a decommissioned broker's
// registration: BROKER_ID_NOT_REGISTERED for an id that is not
// registered; otherwise its replicas leave every ISR and ELR and its
// leaderships move, as Kafka's controller does. Its replicas stay in the
// partition assignments (Kafka does not refuse a broker still hosting
// them): move them away first. Served on client listeners (forwarded to
// the active controller) and on the CONTROLLER listener.
//
// Authorization (authz.go): ALTER on the cluster, as in Kafka; refused,
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerQuorum(reg *protocol.Registry) {
	if h.ctrl == nil {
		return
	}
	reg.Register(64, 0, 0, h.unregisterBroker)
}

func (h *Handlers) unregisterBroker(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.UnregisterBrokerRequest)
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !h.authorizeCluster(req, acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuthorization), errorMessage(errClusterAuthorization)
		return resp, nil
	}
	err := h.ctrl.UnregisterBroker(ctx, r.BrokerID)
	if errorCode(err) == kerr.NotController.Code && !cluster.IsForwarded(req.ClientID) {
		err = kerr.RequestTimedOut
	}
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	return resp, nil
}

package handlers

// FindCoordinator (key 10), v0-v5.
//
// Key type 0 (group): the coordinator is the leader of the group's
// __consumer_offsets partition; the topic is created on the first request
// (see group.Config.OffsetsTopicReplicationFactor for its replication
// factor). Key type 1 (transaction): the leader of the transactional id's
// __transaction_state partition, created the same way on the first
// request. Other types INVALID_REQUEST.
// v4+ batches keys (KIP-699) and answers per key; v0-v3 carry one key.
//
// Authorization (authz.go), as Kafka's: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED) or on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) the key names.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerFindCoordinator(reg *protocol.Registry) {
	reg.Register(10, 0, 5, h.findCoordinator)
}

func (h *Handlers) findCoordinator(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		var err error
		switch {
		case r.CoordinatorType == 1 && !h.authorize(req, acl.OpDescribe, acl.ResourceTransactionalID, key):
			err = errTxnIDAuthorization
		case r.CoordinatorType == 0 && !h.authorize(req, acl.OpDescribe, acl.ResourceGroup, key):
			err = errGroupAuthorization
		case r.CoordinatorType == 1 && h.txn == nil:
			err = kerr.CoordinatorNotAvailable
		case r.CoordinatorType == 1:
			b, ferr := h.txn.Coordinator(ctx, key)
			if ferr == nil {
				c.NodeID = b.NodeID
				c.Host, c.Port = endpoint(b, req.Conn)
			}
			err = ferr
		case r.CoordinatorType != 0:
			err = kerr.InvalidRequest
		case h.coordinator() == nil:
			err = kerr.CoordinatorNotAvailable
		default:
			b, ferr := h.coordinator().Coordinator(ctx, key)
			if ferr == nil {
				c.NodeID = b.NodeID
				c.Host, c.Port = endpoint(b, req.Conn)
			}
			err = ferr
		}
		if err != nil {
			c.ErrorCode, c.ErrorMessage = errorCode(err), kafkaMessage(err)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
	}
	return resp, nil
}

package handlers

// InitProducerId (key 22), v0-v5.
//
// An idempotent producer (no transactional id) always gets a new producer
// id with epoch 0, drawn from a block the metadata quorum allocated to this
// broker, so ids are unique across brokers and restarts. A request that
// names its previous id and epoch (v3+, KIP-360) still gets a fresh id, as
// Kafka does without a transactional id.
//
// A transactional id is served by its transaction coordinator
// (NOT_COORDINATOR elsewhere): the first request gets a new producer id,
// later ones the same id with the epoch bumped, which fences the previous
// producer. An open transaction of the previous producer is aborted first
// and the request answered CONCURRENT_TRANSACTIONS, to be retried. With
// the previous id and epoch (KIP-360) a producer that is still current
// bumps its own epoch; anyone else is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before v4). A transaction timeout above transaction.max.timeout.ms is
// INVALID_TRANSACTION_TIMEOUT; the empty transactional id INVALID_REQUEST.
//
// Authorization (authz.go), as Kafka's: a transactional producer needs
// WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
// an idempotent one needs IDEMPOTENT_WRITE on the cluster or WRITE on some
// topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerInitProducerID(reg *protocol.Registry) {
	if h.pids == nil {
		return
	}
	reg.Register(22, 0, 5, h.initProducerID)
}

func (h *Handlers) initProducerID(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil && !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, *r.TransactionalID) {
		resp.ErrorCode = errorCode(errTxnIDAuthorization)
		return resp, nil
	}
	if r.TransactionalID == nil && !h.authorizeCluster(req, acl.OpIdempotentWrite) && !h.authorizeByType(req, acl.OpWrite, acl.ResourceTopic) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return resp, nil
	}
	if r.TransactionalID != nil {
		if h.txn == nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		expPID, expEpoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			expPID, expEpoch = r.ProducerID, r.ProducerEpoch
		}
		res, err := h.txn.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis, expPID, expEpoch)
		if err != nil {
			resp.ErrorCode = txnErrorCode(err, req.Version < 4)
			req.Logger().Debug().Err(err).Str("transactional_id", *r.TransactionalID).Msg("InitProducerId failed")
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		return resp, nil
	}
	id, err := h.pids.Next(ctx)
	if err != nil {
		req.Logger().Warn().Err(err).Msg("allocating a producer id failed")
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

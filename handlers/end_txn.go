package handlers

// EndTxn (key 26), v0-v3.
//
// Commits or aborts the producer's transaction. The answer comes once the
// decision (PrepareCommit or PrepareAbort) is replicated in
// __transaction_state; the markers follow, and until they are written a
// new request for the id answers CONCURRENT_TRANSACTIONS. A retry of a
// completed EndTxn with the same outcome succeeds; the other outcome is
// INVALID_TXN_STATE. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// Authorization (authz.go): WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerEndTxn(reg *protocol.Registry) {
	reg.Register(26, 0, 3, h.endTxn)
}

func (h *Handlers) endTxn(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	if !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, r.TransactionalID) {
		resp.ErrorCode = errorCode(errTxnIDAuthorization)
		return resp, nil
	}
	if h.txn == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	err := h.txn.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
	resp.ErrorCode = txnErrorCode(err, req.Version < 2)
	if err != nil {
		req.Logger().Debug().Err(err).Str("transactional_id", r.TransactionalID).Bool("commit", r.Commit).Msg("EndTxn failed")
	}
	return resp, nil
}

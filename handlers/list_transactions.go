package handlers

// ListTransactions (key 66), v0-v1 (KIP-664, KIP-994): the transactions
// of the __transaction_state partitions this broker leads, filtered by
// state names (unknown names are echoed in UnknownStateFilters), producer
// ids and, from v1, a minimum running time of ongoing transactions.
// COORDINATOR_LOAD_IN_PROGRESS while a partition is loading.
//
// Authorization (authz.go): only the transactional ids the client may
// DESCRIBE are listed, as in Kafka.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/txn"
)

func (h *Handlers) registerListTransactions(reg *protocol.Registry) {
	reg.Register(66, 0, 1, h.listTransactions)
}

func (h *Handlers) listTransactions(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	if h.txn == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	var states []txn.State
	for _, s := range r.StateFilters {
		st, ok := txn.ParseState(s)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
			continue
		}
		states = append(states, st)
	}
	if len(r.StateFilters) > 0 && len(states) == 0 {
		return resp, nil
	}
	list, err := h.txn.List(states, r.ProducerIDFilters)
	resp.ErrorCode = errorCode(err)
	now := time.Now().UnixMilli()
	for _, l := range list {
		if req.Version >= 1 && r.DurationFilterMillis >= 0 && (l.StartMs < 0 || now-l.StartMs < r.DurationFilterMillis) {
			continue
		}
		if !h.authorize(req, acl.OpDescribe, acl.ResourceTransactionalID, l.TransactionID) {
			continue
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = l.TransactionID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}

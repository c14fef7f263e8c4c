package handlers

// DescribeTransactions (key 65), v0 (KIP-664): the state of transactional
// ids this broker coordinates (NOT_COORDINATOR for the others,
// TRANSACTIONAL_ID_NOT_FOUND for unknown ones).
//
// Authorization (authz.go), as Kafka's: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the partitions of topics the
// client may not DESCRIBE are left out.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDescribeTransactions(reg *protocol.Registry) {
	reg.Register(65, 0, 0, h.describeTransactions)
}

func (h *Handlers) describeTransactions(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	for _, id := range r.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		s.StartTimestamp, s.ProducerID, s.ProducerEpoch = -1, -1, -1
		if !h.authorize(req, acl.OpDescribe, acl.ResourceTransactionalID, id) {
			s.ErrorCode = errorCode(errTxnIDAuthorization)
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		if h.txn == nil {
			s.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		d, err := h.txn.Describe(id)
		if err != nil {
			s.ErrorCode = errorCode(err)
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		s.State, s.TimeoutMillis, s.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
		s.ProducerID, s.ProducerEpoch = d.ProducerID, d.Epoch
		for _, tp := range d.Partitions {
			if !describe(tp.Topic) {
				// Kafka leaves out the partitions of topics the client
				// may not describe.
				continue
			}
			n := len(s.Topics)
			if n == 0 || s.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				s.Topics = append(s.Topics, t)
				n++
			}
			s.Topics[n-1].Partitions = append(s.Topics[n-1].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp, nil
}

package handlers

// The transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
// WriteTxnMarkers, DescribeTransactions, ListTransactions) are served by
// the transaction coordinator; each has its own file. Until the broker
// sets the coordinator they answer COORDINATOR_NOT_AVAILABLE.

import (
	"context"
	"errors"

	"github.com/gokafka/gokafka/txn"
)

// SetTxnCoordinator gives the handlers the transaction coordinator. The
// broker calls it once, before it starts serving.
func (h *Handlers) SetTxnCoordinator(c *txn.Coordinator) { h.txn = c }

// NextProducerID hands out a producer id from this broker's blocks; the
// transaction coordinator draws from the same blocks as idempotent
// producers.
func (h *Handlers) NextProducerID(ctx context.Context) (int64, error) {
	if h.pids == nil {
		return -1, errors.New("producer ids cannot be allocated")
	}
	return h.pids.Next(ctx)
}

package handlers

// The transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
// WriteTxnMarkers, DescribeTransactions, ListTransactions) are served by
// the transaction coordinator; each has its own file. Without one they
// answer COORDINATOR_NOT_AVAILABLE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// txnErrorCode maps a coordinator error to its code; older request
// versions (before KIP-588's PRODUCER_FENCED) get INVALID_PRODUCER_EPOCH,
// as Kafka answers them.
func txnErrorCode(err error, fencedAsEpoch bool) int16 {
	code := errorCode(err)
	if fencedAsEpoch && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

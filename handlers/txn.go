package handlers

// The transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
// WriteTxnMarkers, DescribeTransactions, ListTransactions) are served by
// the transaction coordinator; each has its own file. Without one they
// answer COORDINATOR_NOT_AVAILABLE.

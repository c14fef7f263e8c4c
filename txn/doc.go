// Package txn is the transaction coordinator (KIP-98, with KIP-360's epoch
// bumps, KIP-447's group-aware offset commits and the server side of
// KIP-890 part 1): it owns the transactional ids whose __transaction_state
// partition this broker leads, keeps their state in that partition, and
// finishes every transaction by writing commit or abort markers to each of
// its partitions.
//
// What it owns:
//   - the per-id state machine (state.go): pure, clock-free transitions
//     that say what to write for InitProducerId, AddPartitionsToTxn,
//     AddOffsetsToTxn, EndTxn and the timeout abort, or which error to
//     answer;
//   - __transaction_state (records.go): Kafka's TransactionLogKey/Value
//     formats, acks=all appends, and a transition applied in memory only
//     once its record is replicated;
//   - loading and unloading (coordinator.go, on a coordinator.Owner, which
//     decides ownership): the coordinator of an id is the leader of
//     partition abs(hashCode(id)) % partitions; on becoming leader this
//     broker loads the partition from the log (COORDINATOR_LOAD_IN_PROGRESS
//     meanwhile) and resumes transactions left in PrepareCommit or
//     PrepareAbort; on losing it, it forgets them (NOT_COORDINATOR);
//   - markers (markers.go): written through the local replica manager for
//     partitions led here, with WriteTxnMarkers to other leaders, retried
//     until written or the partition is gone;
//   - the timeout sweep, which aborts transactions open longer than their
//     transaction.timeout.ms, fencing the producer's epoch.
//
// What it must not touch: partition logs (it goes through Replicas) and the
// metadata quorum beyond Image, Watch and CreateTopics. The producer state
// that turns markers into a last stable offset and an aborted-transaction
// index lives in replication/ and idempotent/.
//
// Goroutines: one loader per partition being loaded, one completer per
// transaction whose markers are being written, and the timeout sweep. Lock
// order: Coordinator.mu, then an entry's lock; no lock is held across an
// append, a marker write or a network call.
package txn

// Package replication owns the ReplicaManager: which partitions this broker
// hosts, leads and follows, the ISR and high watermark of the ones it
// leads, the follower fetchers of the ones it follows, and the parked
// waiters of acks=all produces and long-poll fetches.
//
// It reacts to applied cluster metadata (through cluster.Metadata, never the
// quorum directly): a partition assigned to this broker gets a log, a
// deleted topic's logs are removed, config changes reach the logs, and the
// partition record decides the role. It changes metadata only through
// Metadata.AlterPartition (ISR changes, with the leader and partition
// epochs as a compare-and-set).
//
// # Leader
//
// isr.go is the ISR/HW logic as a pure state machine (Kafka's
// Partition.scala and Replica.scala): events in — follower fetched, leader
// appended, tick, new partition record, AlterPartition outcome, waiter
// added — effects out — new HW, ISR proposal, waiters to answer. The
// Manager feeds it under the partition's lock with the wall clock and
// carries out the effects. Becoming leader at a new epoch records where that
// epoch starts; OffsetForLeaderEpoch and the fetch divergence check answer
// as if it were in the log's epoch cache from then on.
//
// # Follower
//
// fetcher.go: one fetcher goroutine per leader broker, fetching all the
// partitions it leads for us in one Fetch v15 (topics by id, ReplicaState
// with our id and broker epoch, LastFetchedEpoch). The leader keeps each
// follower's broker epoch from its fetches and names it when it proposes
// adding the follower to the ISR (AlterPartition v3, KIP-903). A partition handed to a fetcher is first truncated by
// epoch (OffsetForLeaderEpoch v4, KIP-101/279); a DivergingEpoch in a fetch
// response truncates it again. Its HW is min(leader HW, own LEO) and its
// log start follows the leader's.
//
// # Transactions
//
// txn.go: the producer state of producers.go also tracks each producer's
// open transaction, the aborted transactions still in the log (Kafka's
// .txnindex, kept in the producer-state snapshot and rebuilt from the log
// past it) and ended transactions whose marker is not yet below the HW.
// From these come the last stable offset (the first offset of the earliest
// transaction not decided and replicated, else the HW), up to which
// read_committed fetches and ListOffsets read, and the aborted list a
// read_committed fetch returns. Markers come only from the transaction
// coordinator (AppendControl, or ProduceWithOptions with FromCoordinator);
// clients' produce refuses control batches. A transactional batch that
// would open a transaction on a partition is first checked with the
// caller's VerifyTxn (KIP-890), under the producer-state lock.
//
// # Goroutines
//
//   - one fetcher per leader broker we follow partitions of; stopped when it
//     has no partitions left, on Close, and waited for.
//   - one short-lived goroutine per AlterPartition in flight (at most one per
//     partition); Close cancels and waits for them.
//   - the ISR expiry check, a re-armed timer every replica.lag.time.max.ms/2
//     (no goroutine between runs).
//   - the Watch callback runs reconcile on the metadata's applying
//     goroutine; it never calls back into Metadata's change methods.
//
// # Lock order
//
//	Manager.reconcileMu → fetchers.mu → fetcher.mu → Partition.roleMu →
//	Partition.mu → partition.Log's locks
//
// Manager.mu is only held briefly to look partitions up and is never held
// while taking a Partition's locks. fetcher.mu is held while a response is
// applied to the logs (so removing a partition waits for that) but never
// across a network call. Partition.roleMu is held shared across a leader
// append, which may fsync with flush.messages; exclusively only by role
// changes. Nothing is held while waiting for a produce or fetch to complete.
package replication

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
// log start follows the leader's. The fetcher's lock only guards its set
// of partitions; a response is appended, and a log truncated, under that
// partition's role lock (shared) and follow lock, so an fsync of one
// partition never holds up another's role change.
//
// # Reassignment and throttles
//
// A reassignment (KIP-455) is metadata like any other: a broker newly
// named in a partition's replicas gets a log and fetches; the leader
// tracks it from the record and proposes it for the ISR once caught up;
// a broker no longer named drops the partition and deletes its log. The
// leader takes the replica set of a record at the partition epoch it
// already holds, since the AlterPartition answer that completed a move
// does not carry it. throttle.go caps, by bytes per second, what a
// broker copies (follower.replication.throttled.rate) or sends
// (leader.replication.throttled.rate) for the catching-up replicas the
// topic's *.replication.throttled.replicas name.
//
// session.go: a follower's fetch session at the leader keeps a
// SessionWatch registered with its partitions, which they mark dirty on
// every change, so that each of the session's fetches reads only the
// partitions that changed, those it names and those its previous fetch
// left unsettled. A partition left out counts, for the ISR, as fetched at
// the log end by every fetch of the session (Kafka reads it and records
// exactly that) until the leader's LEO moves.
//
// preferred.go: consumers reading from the closest replica (KIP-392). A
// consumer fetch with client metadata (v11+) may be served by a follower,
// up to its own high watermark; with replica.selector.class a leader
// answers a consumer in another rack with the in-sync replica in its rack
// to read from instead.
//
// # Producer state
//
// producers.go keeps each partition's idempotent-producer state current
// on leader and follower appends. A background load, holding no lock,
// rebuilds it from the last snapshot and the log when a partition starts
// being led or followed, after a follower's truncation, or when it is
// first needed, so that a failover normally finds it ready. A leader
// answers idempotent produce only with the state loaded: a produce waits
// for the load at most its timeout, then gets NOT_LEADER_OR_FOLLOWER
// (retriable).
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
//     partition); one whose outcome is unknown is sent again after
//     replica.fetch.backoff.ms until a controller answers. Close cancels and
//     waits for them.
//   - one producer-state load per partition whose state is not loaded
//     (producers.go), at most two reading at once; started when the
//     partition becomes leader or follower, after a follower's truncation,
//     or when its state is first needed. Close cancels and waits for them.
//   - the ISR expiry check, a re-armed timer every replica.lag.time.max.ms/2
//     (no goroutine between runs).
//   - the Watch callback runs reconcile on the metadata's watcher
//     goroutine (cluster.Controller.runWatchers, off raft's fsm), with
//     the latest image; it never calls back into Metadata's change
//     methods. Of a topic changed by partition changes alone it looks at
//     the changed partitions only (cluster.TopicInfo.ChangedSince). A
//     change that adds several partitions here has their logs created by
//     up to 16 short-lived goroutines (openNewLogs), which it waits for.
//   - a fetcher refused because the leader has not applied a partition's
//     metadata yet asks again after 5 ms, doubling up to
//     replica.fetch.backoff.ms (fetcher.go, behindBackoff).
//
// # Lock order
//
//	Manager.reconcileMu → fetchers.mu → fetcher.mu
//	Partition.roleMu → Partition.followMu → producers.mu → Partition.mu →
//	partition.Log's locks
//	Partition.mu → SessionWatch.mu
//	Partition.mu → replicaSets.mu (a leaf)
//
// Manager.mu is only held briefly to look partitions up and is never held
// while taking a Partition's locks. fetcher.mu guards only the fetcher's
// partitions: it is held neither across a network call nor while a log is
// written, and never while taking a Partition's locks but the log's.
// Partition.roleMu is held shared across a leader append and a follower's
// append or truncation, which may fsync; exclusively only by role
// changes, which so wait for them (as Kafka's leaderIsrUpdateLock). followMu
// keeps the fetchers of an old and a new leader from writing a log at
// once. producers.mu is never held across an fsync or a producer-state
// rebuild. Nothing is held while waiting for a produce or fetch to
// complete, or for a producer-state load.
package replication

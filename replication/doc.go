// Package replication owns the ReplicaManager: which partitions this broker
// hosts and leads, the high watermark of each, and the parked waiters of
// acks=all produces and long-poll fetches, woken by high-watermark changes.
//
// It reacts to applied cluster metadata (through cluster.Metadata, never the
// quorum directly): a partition assigned to this broker gets a log, a
// deleted topic's logs are removed, config changes reach the logs.
//
// Today every partition has a single replica, so the high watermark follows
// the log end offset at each append. The ISR state machine and follower
// fetchers extend this package without changing its callers.
//
// Lock order: Manager.mu, then Partition.mu. Neither is held across disk
// I/O that can block on fsync, nor while waiting.
package replication

// Package group is the consumer-group coordinator for Kafka's classic
// group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, KIP-345 static
// membership, KIP-394 required member ids) and the store of committed
// offsets. KIP-848's consumer protocol is not served.
//
// What it owns:
//   - the group state machine (classic.go): pure, clock-free, driven by
//     requests and tick; parked JoinGroup/SyncGroup requests are callbacks
//     completed by state changes and timers;
//   - __consumer_offsets (records.go, appender.go): Kafka's key/value
//     formats, one ordered writer per partition, acks=all appends, and
//     offsets acknowledged only after their append is;
//   - ownership (coordinator.go): the coordinator of a group is the leader
//     of partition abs(hashCode(groupID)) % partitions of
//     __consumer_offsets; on becoming leader this broker loads the
//     partition's groups from the log (COORDINATOR_LOAD_IN_PROGRESS
//     meanwhile), on losing it unloads them (NOT_COORDINATOR afterwards);
//   - offsets.retention.minutes expiry (offsets.go), writing tombstones;
//   - transactional offset commits (txn.go): written as the producer's
//     transactional batch, held per producer id until the transaction
//     coordinator's marker in the partition commits or drops them
//     (CompleteTxn), and rebuilt from batches and markers on load.
//
// What it must not touch: the partition logs directly (it goes through the
// Replicas interface, which the replica manager implements) or the
// metadata quorum (only Metadata's Image, Watch and CreateTopics); kmsg
// request types stay in handlers/.
//
// Goroutines: one loader per partition being loaded, one appender per
// loaded partition, the retention sweep, and a timer per group with a
// pending deadline (time.AfterFunc). Lock order: Coordinator.mu, then a
// group's lock, then an appender's lock; append callbacks take the group
// lock on the appender's goroutine, never while the appender's lock is
// held.
package group

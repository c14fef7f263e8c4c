// Package group is the consumer-group coordinator for Kafka's classic
// group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, KIP-345 static
// membership, KIP-394 required member ids), for KIP-848's consumer
// protocol (ConsumerGroupHeartbeat) and the store of committed offsets.
//
// What it owns:
//   - the group state machine (classic.go): pure, clock-free, driven by
//     requests and tick; parked JoinGroup/SyncGroup requests are callbacks
//     completed by state changes and timers;
//   - the consumer protocol's state machine (consumer.go) and its
//     server-side assignors (assign.go), equally pure; consumer_coord.go
//     binds it to the coordinator and persists it: after every change the
//     group's ConsumerGroup* records that changed (and tombstones for
//     those gone) are written, the heartbeat answered once they are, so a
//     new coordinator loads members, epochs and assignments and members
//     carry on without rejoining;
//   - online migration between the protocols (migrate.go, the pure part;
//     migrate_coord.go): a consumer-protocol member upgrading a classic
//     group with members, classic members served inside a consumer group
//     (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, commits by generation),
//     and the downgrade when the last consumer-protocol member leaves;
//     each conversion one append, as group.consumer.migration.policy
//     allows. It decodes the classic consumer's embedded protocol
//     (subscription, assignment) with kmsg's ConsumerMemberMetadata and
//     ConsumerMemberAssignment;
//   - __consumer_offsets (records.go, records_consumer.go, appender.go):
//     Kafka's key/value formats, one ordered writer per partition,
//     acks=all appends, and offsets acknowledged only after their append
//     is; every record is keyed by what it replaces and every deletion is
//     a tombstone, so the compacted topic loads to the same state;
//   - loading and unloading (coordinator.go, on a coordinator.Owner, which
//     decides ownership): the coordinator of a group is the leader
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

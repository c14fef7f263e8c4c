// Package share serves share groups (KIP-932, at Kafka 4.2's level:
// ShareFetch and ShareAcknowledge v2 with KIP-1222 renew acknowledgements).
//
// What it owns:
//   - the membership state machine (group.go) and the coordinator that
//     runs it (coordinator.go): ShareGroupHeartbeat with member epochs,
//     session timeouts (group.share.session.timeout.ms, per group
//     share.session.timeout.ms), an assignor that gives every member every
//     partition of its subscriptions, ShareGroupDescribe, listing and
//     deletion. The coordinator of a share group is the broker that would
//     coordinate a classic group of that id (the leader of its
//     __consumer_offsets partition). Membership is stored there as
//     Kafka's ShareGroup* records, through the group coordinator (a
//     Store): when the coordinator moves, the new one loads the members
//     with their epochs and they carry on.
//   - the share-partition state machine (state.go): per group and
//     topic-partition, the start offset (SPSO), the end offset (SPEO) and
//     the in-flight records between them (Available, Acquired,
//     Acknowledged, Archived), acquisition locks
//     (share.record.lock.duration.ms), delivery counts and
//     share.delivery.count.limit, accept/release/reject/renew. Pure: no
//     I/O, no clock; times are passed in.
//   - the partition side (manager.go), on each partition's leader: share
//     sessions per (group, member) with their epochs, ShareFetch's
//     acquisition from the log (share.isolation.level: read_committed
//     stops at the last stable offset and archives aborted records and
//     transaction markers), long-poll, piggy-backed and standalone
//     acknowledgements, lock expiry, release when a session closes or its
//     connection drops, and share.auto.offset.reset (latest, earliest,
//     by_duration) for a partition the group never consumed.
//
// Persistence (gokafka's choice instead of Kafka's __share_group_state):
// share-partition state lives in the leader's memory. Every
// group.share.checkpoint.interval.ms the leader writes the start offsets
// that moved to the metadata quorum (cluster.ShareGroupState, forwarded to
// the active controller as WriteShareGroupState); administrators' changes
// (AlterShareGroupOffsets, DeleteShareGroupOffsets, deleting the group) go
// there too and move the group's share epoch. A broker that becomes
// leader, or sees the group's share epoch move, rebuilds the share
// partition from the checkpoint. A checkpoint never passes a record that
// was not final when it was taken, so after a leader failover the start
// offset never jumps forward past unacknowledged records: records
// accepted since the last checkpoint, and those in flight, are delivered
// again (at-least-once, with their delivery counts starting over). The
// same happens on a restart of the whole cluster.
//
// What it must not touch: partition logs (it reads through the replica
// manager's Fetch and ListOffset), the metadata quorum beyond Image and
// UpdateShareState, and kmsg types, which stay in handlers/.
//
// Goroutines: the coordinator's session-expiry loop (1 s) and the
// manager's sweeper (250 ms: lock expiry, dropping partitions no longer
// led here, checkpoints), both stopped by Close, each asleep while it
// holds nothing (no group, no share partition) until the first arrives; per session, a
// context.AfterFunc on its connection; a parked ShareFetch waits in its
// connection's reader goroutine, on channels closed when a high watermark
// moves or records become available again.
//
// Locks: Coordinator.mu comes before the group coordinator's locks (a
// heartbeat queues its records under it and waits for the write after
// releasing it); nothing in group calls back into share. Manager.mu is held across no log read
// (Fetch), metadata proposal or call into the coordinator; building a share
// partition asks the replica manager for offsets (ListOffset) under it, so
// replication's partition locks come after Manager.mu and replication never
// calls back into share.
package share

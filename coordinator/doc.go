// Package coordinator owns the internal topics that coordinators keep
// their state in (__consumer_offsets, __transaction_state): the framework
// the group, transaction and share coordinators share, so that none of
// them exports it to the others.
//
// What it owns:
//   - creating an internal topic on first use, as Kafka does, and finding
//     the broker that coordinates a key: the leader of the key's partition
//     (internal_topic.go: InternalTopic, CoordinatorFor);
//   - which partition a key maps to (partitioner.go: PartitionFor, Kafka's
//     abs(hashCode(key)) % partitions, identical to Kafka's so clients and
//     tools agree);
//   - loading a partition's log as a new leader does, bounded by the high
//     watermark (readlog.go: ReadPartitionLog), and reading its records
//     and transaction markers back through partition's streaming record
//     iterator, compressed batches included (records.go: LoadPartition,
//     ParseBatches);
//   - the replica store coordinators append through and read back from
//     (store.go: Replicas, ReplicaStore) and the metadata they follow
//     (Metadata);
//   - ownership (owner.go: Owner): which partitions of the topic this
//     broker leads, loading them on becoming leader and unloading them on
//     losing leadership, and which loaded partition serves a key.
//
// What it must not touch: the coordinators' own record formats and state
// machines (group/, txn/, share/), or the partition logs directly (it goes
// through the replica manager).
//
// Goroutines: none of its own; Owner starts one loader per partition being
// loaded, counted in the coordinator's WaitGroup. Locks: Owner's state is
// guarded by the coordinator's lock, so it adds none; Reconcile takes that
// lock and never blocks under it.
package coordinator

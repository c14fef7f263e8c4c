// Package idempotent owns gokafka's idempotent-producer state: producer
// ids handed out from blocks that the metadata quorum allocates (so no id
// is ever given twice, across brokers and restarts), and, per partition,
// the state that lets a leader recognise a retried batch: for each
// producer id its epoch and its last five batches (first/last sequence,
// first/last offset, timestamp).
//
// The rules are Kafka's (ProducerStateManager, ProducerAppendInfo):
//   - a batch whose epoch is older than the producer's is refused
//     (INVALID_PRODUCER_EPOCH, or PRODUCER_FENCED for transactional
//     producers at the coordinator);
//   - a batch equal to one of the last five (same epoch and sequence range)
//     is a retry: it is answered with its original offsets, not appended;
//   - otherwise its first sequence must follow the last one (with a wrap
//     from MaxInt32 to 0), or be 0 for a new epoch (also one a transaction
//     marker bumped, before any batch was written in it), else
//     OUT_OF_ORDER_SEQUENCE_NUMBER; a producer with no state (new, or
//     expired) may start anywhere;
//   - producers idle for producer.id.expiration.ms are forgotten.
//
// State is a plain value with no I/O and no clock of its own: the caller
// (replication) holds the partition's produce lock around Check, the
// append, and Update, and feeds times in. Snapshots are encoded here and
// written by the caller, so that a restart rebuilds the state from the
// last snapshot plus the log after it.
package idempotent

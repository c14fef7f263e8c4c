// Package broker owns the Server: it opens the metadata, the logs, the
// replica manager and the handlers in order, then the listeners, and stops
// them in the reverse order.
//
// Start-up order: metadata (cluster id, topics) and logs (recovered) →
// registration, fenced → replica manager (reconciled with the metadata) →
// handlers → unfenced → listeners. A restarting broker (its log dirs'
// meta.properties name the cluster) loads its logs while the metadata
// quorum opens and catches up, and checks the cluster id once both are
// done; a new one opens the metadata first and writes the id it learns.
// It registers before it takes up its partitions, as Kafka's broker does,
// so that its replica fetchers are known to the leaders they reach, and
// asks to be unfenced (to lead, to join ISRs) once it can serve them.
// Every phase is logged with the time since the start began. The port
// accepts connections only after all of that, so a client never sees a
// half-loaded broker. Shutdown: stop accepting, let in-flight
// requests finish and their responses go out, then close the logs
// (flush, checkpoints, clean-shutdown marker).
package broker

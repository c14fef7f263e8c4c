// Package broker owns the Server: it opens the metadata, the logs, the
// replica manager and the handlers in order, then the listeners, and stops
// them in the reverse order.
//
// Start-up order: metadata (cluster id, topics) → logs (recovered) →
// replica manager (reconciled with the metadata) → handlers → listeners.
// The port accepts connections only after all of that, so a client never
// sees a half-loaded broker. Shutdown: stop accepting, let in-flight
// requests finish and their responses go out, then close the logs
// (flush, checkpoints, clean-shutdown marker).
package broker

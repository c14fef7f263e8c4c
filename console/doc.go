// Package console is gokafka's built-in live console: plain HTML, CSS and
// JavaScript embedded in the binary (no build step), served by an
// http.Handler that the broker's HTTP listener mounts at "/".
//
// It shows what the broker acts on, not a second model of the cluster:
// the metadata image (brokers with the controller marked, fenced brokers,
// offline log dirs; topics, leaders, ISRs), the replica manager's view of
// every partition it hosts (each replica's LEO as the leader knows it from
// the followers' fetches, the HW, follower lag), the consumer groups it
// coordinates with their lag, and the open transactions of the partitions
// it leads with how far they hold the LSO below the HW. A timeline records
// ISR shrinks and expansions, leader elections and broker fencing with
// their reasons, derived from consecutive metadata images.
//
// One feed serves every browser: a single sampler goroutine reads the
// Source while at least one page is open (every Options.Interval, and at
// once on a metadata change) and pushes the state, when it changed, to
// every page over server-sent events; metadata events are pushed as they
// are applied. A page never causes a read of the cluster of its own, and
// the console never sends a Kafka request.
//
// It must not: take a broker lock across an HTTP write, or block the
// metadata watch (its callback only diffs two images and queues).
package console

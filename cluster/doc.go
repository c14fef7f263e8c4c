// Package cluster owns gokafka's cluster metadata: registered brokers,
// topics with their ids, partition assignments, leaders, leader epochs,
// partition epochs and ISRs, topic and broker config overrides, and client
// quotas (quotas.go).
//
// The metadata is a deterministic state machine (State) changed only by
// Commands. A controller validates a client's intent (topic names, partition
// counts, replica assignment, configs), turns it into Commands and proposes
// them to a Log; the Log orders and persists them and applies them to the
// State, the commands of one entry all together or not at all. A node that
// becomes the active controller applies the whole committed log before it
// validates anything. Readers take immutable Images and are told of every
// new one.
//
// Elections follow Kafka 4.x with eligible leader replicas (KIP-966)
// always on, and ISR expansions carry broker epochs (KIP-903); see
// election.go and docs/architecture.md.
//
// Everything outside this package reads metadata through the Metadata
// interface, so the Log underneath can change (a one-voter quorum today,
// a replicated one when several nodes form a cluster) without a second
// metadata path.
//
// peer.go defines how a node names itself on the requests it sends other
// nodes (cluster id, broker id, registration incarnation) and how a
// receiver checks that against its image.
package cluster

// Package cluster owns gokafka's cluster metadata: registered brokers,
// topics with their ids, partition assignments, leaders, leader epochs,
// partition epochs and ISRs, topic and broker config overrides.
//
// The metadata is a deterministic state machine (State) changed only by
// Commands. A controller validates a client's intent (topic names, partition
// counts, replica assignment, configs), turns it into Commands and proposes
// them to a Log; the Log orders and persists them and applies them to the
// State. Readers take immutable Images and are told of every new one.
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

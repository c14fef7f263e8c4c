// Package cluster owns gokafka's cluster metadata: registered brokers and
// their epochs, topics with their ids, partition assignments, leaders,
// leader and partition epochs, ISRs and ELRs, topic, broker and group
// config overrides, share-group checkpoints, producer-id blocks, client
// quotas and ACL bindings.
//
// # What it must not touch
//
// No partition data, no replica fetching, no client connections: it never
// reads a record. It decides who leads and who is in the ISR; replication/
// carries that out and asks for ISR changes through AlterPartition. Its
// only network traffic is to the metadata quorum (raft.go) and, off the
// active controller, the forwarded Kafka requests of forward.go. It stores
// group config overrides and share-group checkpoints without owning their
// rules: which group configs exist is group's (group.ValidateConfigs, run
// by the caller), how a checkpoint changes a share group is
// share/checkpoint's, and decoding client requests is the handlers'.
//
// # The pieces
//
//	state.go        State and Command: the deterministic state machine
//	image.go        Image: an immutable, published view of the State
//	controller.go   Controller (implements Metadata), Log, topic and config changes
//	election.go     partition changes: elections, ISR/ELR rules (pure functions)
//	lifecycle.go    broker registration, heartbeats, controlled shutdown, producer ids
//	sessions.go     broker sessions: who has been silent too long (pure, clock passed in)
//	logdirs.go      log dir assignment and offline log dirs
//	raft.go         the production Log: a hashicorp/raft quorum and its fsm
//	retention.go    the log kept after a snapshot: metadata.max.retention.bytes/.ms
//	memlog.go       MemLog, an in-memory Log for tests of the real Controller
//	forward.go      requests forwarded to the active controller
//	configs.go      topic config definitions and their resolution
//	quotas.go       client quotas
//	acls.go         ACL bindings (package acl decides from them)
//	share.go        share-group checkpoints and group config overrides, stored
//	cleanshutdown.go  the broker epoch of a clean shutdown (KIP-966)
//	reassign.go     partition reassignment (KIP-455), ElectLeaders (KIP-460), auto leader rebalance
//	placement.go    where new partitions' replicas go: rack-aware by broker.rack (Kafka's assignment)
//	membership.go   who follows the quorum: observers joining, UnregisterBroker, DescribeQuorum, AddRaftVoter/RemoveRaftVoter (KIP-853)
//
// # How a change flows
//
// The metadata is a deterministic state machine (State) changed only by
// Commands. The Controller validates a client's intent (topic names,
// partition counts, replica assignment, configs, ISR changes), turns it
// into Commands and proposes them to a Log; the Log orders and persists
// them and applies them to the State, the commands of one entry all
// together or not at all. A node that becomes the active controller
// applies the whole committed log (Log.Barrier, once per Log.Term) before
// it validates anything, under proposeMu, so that no validation runs
// against a stale image. Readers take immutable Images and are told of
// new ones (Watch) in log order, on a goroutine of their own over raft:
// the fsm only publishes, and images published while the watchers are
// still busy with an older one are delivered together, as the latest.
// AlterPartition calls that wait for proposeMu together are validated one
// after the other and committed as one entry (group commit).
//
// A quorum's first election does not wait out a random election timeout:
// a voter that knows no leader asks at once (a raft pre-vote first), the
// voters of a cluster in the order of their ids so that ones starting
// together do not split the vote (raft.go, electNow). Once it runs, the
// quorum keeps KRaft's cadence (quorumTimings): the leader heartbeats
// every 400-800 ms (paceHeartbeats), a voter elects after
// controller.quorum.fetch.timeout.ms without the leader, and the commit
// index is repeated every 2-4 s when idle; followers learn a proposal's
// commit at once from a barrier the leader appends after it (nudgeLoop).
//
// The Log is the only seam between the Controller and the quorum: every
// question about the quorum (who leads it, this node's term, how far it
// has applied) goes through it. raftLog is the production one; MemLog
// applies every proposal at once and always leads, and OpenInMemory gives
// tests the real Controller and election.go over it, without raft, disks
// or background loops (replication/'s in-process clusters run on it).
//
// # Elections
//
// Elections follow Kafka 4.x with eligible leader replicas (KIP-966)
// always on, and ISR expansions carry broker epochs (KIP-903); see
// election.go and docs/architecture.md. A broker registers fenced, is
// unfenced by its first heartbeat, and is fenced again by a controlled
// shutdown, a new incarnation, or a session that expired.
//
// # Who uses it
//
// Everything outside this package reads metadata through the Metadata
// interface, so the Log underneath can change (a one-voter quorum today,
// a replicated one when several nodes form a cluster) without a second
// metadata path.
//
// peer.go defines how a node names itself on the requests it sends other
// nodes (cluster id, broker id, registration incarnation) and how a
// receiver checks that against its image.
//
// mux.go splits the CONTROLLER listener between raft and Kafka-protocol
// requests. When that listener is TLS (QuorumConfig.TLS) every connection
// is handshaken before it is classified, raft included, and raft is taken
// only from a peer whose certificate the truststore verified; the raft
// dialer and the controller client dial TLS with the node's keystore.
package cluster

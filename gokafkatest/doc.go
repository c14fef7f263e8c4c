// Package gokafkatest starts real gokafka clusters inside a Go test
// process: N full nodes (broker and metadata-quorum voter each, the same
// code the gokafka binary runs) on free loopback ports with temporary data
// directories, torn down by t.Cleanup.
//
//	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
//
// Unlike an in-memory fake, replication is real — leader epochs, HW, the
// ISR, elections, truncation and recovery from the data directories — and
// the fault controls act on the real network paths and processes' state:
//
//   - Stop(id) shuts a node down cleanly (controlled shutdown first), Kill(id)
//     stops it abruptly (see Cluster.Kill for what that means in one
//     process), Restart(id) starts it again on the same ports and data.
//   - Pause(id) freezes all of a node's traffic, client and peer, in both
//     directions, losing nothing, until Resume(id): to the rest of the
//     cluster and to clients it looks like a process stopped with SIGSTOP
//     (its session expires, it is fenced, it leaves the ISRs), although its
//     own timers keep running inside the test process.
//   - Partition(groups...) cuts the links between groups of nodes (clients
//     still reach every node), Isolate(id) cuts one node from the others,
//     Heal() undoes both.
//   - MoveLeader(topic, p, to) moves a partition's leadership; WaitFullISR
//     waits for every replica to be in the ISR.
//
// Every connection between two nodes goes through a fault proxy of its own
// (one per ordered pair and per listener, internal/faultnet), and each
// client reaches a node through that node's client proxy, whose address is
// the one the node advertises: Seeds and Metadata name the proxies.
//
// Methods that fail call t.Fatal: call them from the test's goroutine.
package gokafkatest

package replication_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gokafka/gokafka/handlers"
)

// Followers fetch from their leader in a fetch session (KIP-227): one
// session per follower, records still replicated through it, and once
// everything is replicated an idle follower's fetch names no partition
// and its answer carries none.
func TestCluster_FollowersFetchIncrementallyInASession(t *testing.T) {
	c := newSimClusterWith(t, testReplConfig(10*time.Second), handlers.Config{FollowerSessionWatch: true}, nil, 1, 2, 3)
	const topics = 8
	for i := range topics {
		c.createTopic(fmt.Sprint("s", i), []int32{1, 2, 3}, nil)
	}
	for i := range topics {
		topic := fmt.Sprint("s", i)
		c.leader(topic).mustProduce(topic, "v"+topic, -1)
	}
	for i := range topics {
		c.waitConverged(fmt.Sprint("s", i), "vs"+fmt.Sprint(i))
	}
	sessions := c.nodes[1].h.FetchSessions()
	eventually(t, "both followers fetch incrementally from the leader", func() bool {
		st := sessions.Stats()
		return st.Sessions == 2 && st.Partitions == 2*topics && st.Incremental > 0
	})
	// Replicated through the sessions: a new record reaches both
	// followers.
	c.leader("s3").mustProduce("s3", "later", -1)
	c.waitConverged("s3", "vs3", "later")

	// The high watermark that record moved reaches the followers with
	// the next fetches; then nothing changes.
	settled := sessions.Stats()
	eventually(t, "four more incremental fetches", func() bool { return sessions.Stats().Incremental >= settled.Incremental+4 })
	before := sessions.Stats()
	built := c.nodes[2].rm.FetchRequestsBuilt() + c.nodes[3].rm.FetchRequestsBuilt()
	eventually(t, "ten more incremental fetches", func() bool { return sessions.Stats().Incremental >= before.Incremental+10 })
	after := sessions.Stats()
	if after.Created != before.Created {
		t.Fatalf("sessions created while idle: %d then %d", before.Created, after.Created)
	}
	if named, answered := after.Named-before.Named, after.Answered-before.Answered; named != 0 || answered != 0 {
		t.Fatalf("idle followers' fetches named %d partitions and were answered with %d, want none", named, answered)
	}
	// Neither side visits the idle partitions: the leader reads none of
	// them, the followers build their requests without reading their
	// logs.
	if read := after.Read - before.Read; read != 0 {
		t.Fatalf("idle followers' fetches read %d partitions at the leader, want none", read)
	}
	if n := c.nodes[2].rm.FetchRequestsBuilt() + c.nodes[3].rm.FetchRequestsBuilt() - built; n != 0 {
		t.Fatalf("idle followers built %d requests from all their partitions, want none", n)
	}
}

package replication_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// gatedFS holds the opening of new logs (the look for their directory)
// and the creation of directories whose path contains hold until open is
// closed.
type gatedFS struct {
	partition.FS
	hold    string
	open    chan struct{}
	reached sync.Once
	arrived chan struct{}
}

func (g *gatedFS) wait(path string) {
	if strings.Contains(path, g.hold) {
		g.reached.Do(func() { close(g.arrived) })
		<-g.open
	}
}

func (g *gatedFS) MkdirAll(path string, perm os.FileMode) error {
	g.wait(path)
	return g.FS.MkdirAll(path, perm)
}

func (g *gatedFS) Stat(name string) (bool, bool, error) {
	g.wait(name)
	return g.FS.Stat(name)
}

// Every broker applies the metadata log at its own pace, so the followers
// of a new partition often fetch it before its leader has taken it up and
// are refused. They ask again within milliseconds rather than after
// replica.fetch.backoff.ms: an acks=all produce to the new partition waits
// for them all, and would wait that long too.
func TestCluster_FollowerRetriesSoonWhenLeaderHasNotAppliedMetadata(t *testing.T) {
	cfg := testReplConfig(10 * time.Second)
	cfg.ReplicaFetchBackoff = time.Hour
	c := newSimCluster(t, cfg, 1, 2, 3)
	// Broker 1 restarts and applies metadata last, creating the new
	// log only when the test lets it.
	gate := &gatedFS{hold: "/t-0", open: make(chan struct{}), arrived: make(chan struct{})}
	n1 := c.nodes[1]
	n1.stop()
	n1.wrapFS = func(fs partition.FS) partition.FS { gate.FS = fs; return gate }
	n1.start()

	created := make(chan struct{})
	go func() {
		defer close(created)
		c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "3"})
	}()
	<-gate.arrived
	// The followers have the partition and fetch it from broker 1, which
	// does not host it yet and refuses.
	for _, id := range []int32{2, 3} {
		id := id
		eventually(t, "broker hosts t as a follower", func() bool { return c.nodes[id].rm.Get(partition.TopicPartition{Topic: "t"}) != nil })
	}
	time.Sleep(100 * time.Millisecond) // let the first refused fetches happen
	close(gate.open)
	<-created

	l := c.leader("t")
	if _, err := l.produce("t", "a", -1); err != nil {
		t.Fatalf("acks=all produce to a new partition: %v", err)
	}
	c.waitISR("t", 1, 2, 3)
}

// barrierFS records whether the logs of two partitions were being opened
// at the same time: each opening (its look for the log's directory)
// waits (a while) for the other to begin.
type barrierFS struct {
	partition.FS
	names   []string
	arrived sync.WaitGroup
	// alone is set when a creation waited in vain for the other.
	alone atomic.Bool
}

func (b *barrierFS) Stat(path string) (bool, bool, error) {
	for _, n := range b.names {
		if strings.HasSuffix(path, n) {
			b.arrived.Done()
			done := make(chan struct{})
			go func() { b.arrived.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				b.alone.Store(true)
			}
		}
	}
	return b.FS.Stat(path)
}

// A topic with many partitions costs each broker a few fsyncs per new log;
// the logs are created several at a time, not one after another.
func TestManager_NewTopicLogsAreCreatedConcurrently(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1)
	b := &barrierFS{names: []string{"/t-0", "/t-1"}}
	b.arrived.Add(2)
	n := c.nodes[1]
	n.stop()
	n.wrapFS = func(fs partition.FS) partition.FS { b.FS = fs; return b }
	n.start()
	errs := c.ctrl.CreateTopics(context.Background(), []cluster.TopicSpec{{
		Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1}, {1}},
	}}, false)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for p := range int32(2) {
		if n.rm.Get(partition.TopicPartition{Topic: "t", Partition: p}) == nil {
			t.Fatalf("partition %d not hosted", p)
		}
	}
	if b.alone.Load() {
		t.Fatal("the two logs of the new topic were created one after the other")
	}
}

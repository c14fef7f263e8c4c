package replication_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

func memHas(fs *partition.MemFS, name string) bool {
	ok, _, _ := fs.Stat(name)
	return ok
}

// A new partition's replicas, leader and followers, create no files
// until their first record: taking up a partition is registering it in
// memory. The first acks=all record creates them on every replica (with
// the topic id), and a replica restarted before any record takes the
// partition up again as a new empty log and rejoins the ISR.
func TestCluster_NewPartitionReplicasCreateFilesAtTheirFirstRecord(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "3"})
	for _, id := range []int32{1, 2, 3} {
		n := c.nodes[id]
		eventually(t, "broker hosts t", func() bool { return n.rm.Get(partition.TopicPartition{Topic: "t"}) != nil })
	}
	c.waitISR("t", 1, 2, 3)
	// Let the followers fetch the empty partition a few times.
	time.Sleep(50 * time.Millisecond)
	for _, id := range []int32{1, 2, 3} {
		if n := c.nodes[id]; memHas(n.fs, "/logs/t-0") {
			t.Fatalf("broker %d created t-0's directory before any record", id)
		}
	}

	// A follower restarted now finds no directory and takes the
	// partition up as at creation.
	f := c.nodes[3]
	if c.partitionInfo("t").Leader == 3 {
		f = c.nodes[2]
	}
	f.stop()
	f.start()
	eventually(t, "restarted broker hosts t", func() bool { return f.rm.Get(partition.TopicPartition{Topic: "t"}) != nil })
	if memHas(f.fs, "/logs/t-0") {
		t.Fatal("taking t-0 up again after a restart created its directory")
	}
	c.waitISR("t", 1, 2, 3)

	c.leader("t").mustProduce("t", "first", -1)
	c.waitConverged("t", "first")
	id := c.image().Topics["t"].ID
	for _, nid := range []int32{1, 2, 3} {
		n := c.nodes[nid]
		for _, name := range []string{"00000000000000000000.log", "partition.metadata"} {
			if !memHas(n.fs, filepath.Join("/logs/t-0", name)) {
				t.Fatalf("broker %d has no %s after the first record", nid, name)
			}
		}
		if got, ok, err := n.log("t").TopicID(); err != nil || !ok || got != [16]byte(id) {
			t.Fatalf("broker %d: topic id %v %v %v", nid, got, ok, err)
		}
	}
}

// The first produce to a new partition whose files cannot be created is
// answered KAFKA_STORAGE_ERROR, and the log dir goes offline as for any
// storage failure; the partition in the other dir keeps serving.
func TestFirstProduceFailingToCreateLogFilesAnswersStorageError(t *testing.T) {
	s, inD1, inD2, handled := twoLogDirs(t, func(op, name string) error {
		if op == "mkdir" && strings.HasPrefix(name, "/d1/") {
			return syscall.EIO
		}
		return nil
	})
	rm := s.rm
	_, err := rm.Produce(context.Background(), inD1, testkit.SimpleBatch(1, 1, 10), -1, time.Second)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("first produce when the log's files cannot be created: %v, want KAFKA_STORAGE_ERROR", err)
	}
	select {
	case d := <-handled:
		if d != "/d1" {
			t.Fatalf("failed dir %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("log dir failure not handled")
	}
	if _, err := rm.Produce(context.Background(), inD1, testkit.SimpleBatch(1, 1, 10), -1, time.Second); !errors.Is(err, replication.ErrStorage) {
		t.Fatalf("produce to a partition in the offline dir: %v, want ErrStorage", err)
	}
	mustProduce(t, rm, inD2, testkit.SimpleBatch(1, 1, 10))
}

package replication_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

const nodeID = 1

// stack is one broker's metadata, logs and replica manager.
type stack struct {
	ctrl    *cluster.Controller
	logs    *partition.Manager
	rm      *replication.Manager
	metaDir string
	logDir  string
}

func testClusterConfig() cluster.Config {
	return cluster.Config{NodeID: nodeID, NumPartitions: 1, DefaultReplicationFactor: 1, DeleteTopicEnable: true}
}

func openController(t *testing.T, cfg cluster.Config, dir string) *cluster.Controller {
	t.Helper()
	ctrl := openQuorum(t, cfg, dir)
	if err := ctrl.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	return ctrl
}

// openQuorum opens a metadata quorum of one on dir, closed when the test
// ends; brokers are never fenced for missing heartbeats while a test runs.
func openQuorum(t *testing.T, cfg cluster.Config, dir string) *cluster.Controller {
	t.Helper()
	ctrl, err := cluster.Open(context.Background(), cfg, cluster.QuorumConfig{Dir: dir, SessionTimeout: time.Hour}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return ctrl
}

func openLogs(t *testing.T, fs partition.FS, logDir string, meta cluster.Metadata) *partition.Manager {
	t.Helper()
	configFor := func(topic string) partition.Config {
		im := meta.Image()
		return replication.LogConfig(im, im.Topics[topic], nodeID, meta.BrokerDefaults())
	}
	logs, err := partition.OpenManager(fs, partition.ManagerConfig{
		Dirs: []string{logDir}, NodeID: nodeID, ClusterID: meta.Image().ClusterID, Defaults: partition.DefaultConfig(),
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour, FlushSchedulerInterval: time.Hour,
	}, configFor, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// newStack builds a broker on the real filesystem under a temp dir.
func newStack(t *testing.T) *stack {
	t.Helper()
	root := t.TempDir()
	s := &stack{metaDir: filepath.Join(root, "meta"), logDir: filepath.Join(root, "logs")}
	s.ctrl = openController(t, testClusterConfig(), s.metaDir)
	s.logs = openLogs(t, partition.OSFS(), s.logDir, s.ctrl)
	t.Cleanup(func() { s.logs.Close() })
	s.rm = newManager(t, s.logs, s.ctrl)
	return s
}

// newManager starts a replica manager over logs, stopped (where the
// manager has anything to stop) before the logs are closed.
func newManager(t *testing.T, logs *partition.Manager, meta cluster.Metadata) *replication.Manager {
	t.Helper()
	rm, err := replication.NewManager(logs, meta, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := any(rm).(interface{ Close() }); ok {
		t.Cleanup(c.Close)
	}
	return rm
}

func strp(s string) *string { return &s }

func (s *stack) createTopic(t *testing.T, name string, partitions int32, configs map[string]string) {
	t.Helper()
	spec := cluster.TopicSpec{Name: name, NumPartitions: partitions, ReplicationFactor: 1, Configs: map[string]*string{}}
	for k, v := range configs {
		spec.Configs[k] = strp(v)
	}
	if errs := s.ctrl.CreateTopics(context.Background(), []cluster.TopicSpec{spec}, false); errs[0] != nil {
		t.Fatalf("create %s: %v", name, errs[0])
	}
	settle(t, s.ctrl)
}

// settle waits until the broker over ctrl has acted on every metadata
// change made so far: over raft the watchers apply images on a goroutine
// of their own, after the change methods return.
func settle(t *testing.T, ctrl *cluster.Controller) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ctrl.AwaitWatchers(ctx); err != nil {
		t.Fatalf("waiting for the broker to apply the metadata: %v", err)
	}
}

func tp(topic string, p int32) partition.TopicPartition {
	return partition.TopicPartition{Topic: topic, Partition: p}
}

func mustProduce(t *testing.T, rm *replication.Manager, p partition.TopicPartition, batch []byte) partition.AppendInfo {
	t.Helper()
	info, err := rm.Produce(context.Background(), p, batch, -1, 5*time.Second)
	if err != nil {
		t.Fatalf("produce to %s: %v", p, err)
	}
	return info
}

// fetchOne fetches a single partition with no waiting.
func fetchOne(rm *replication.Manager, p partition.TopicPartition, offset int64) replication.FetchResult {
	return rm.Fetch(context.Background(), replication.FetchParams{
		MaxBytes:   1 << 20,
		Partitions: []replication.FetchPartition{{TP: p, Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
	})[0]
}

// headers parses fetched records, failing on anything that is not whole,
// valid batches.
func headers(t *testing.T, recs []byte) []partition.BatchHeader {
	t.Helper()
	if len(recs) == 0 {
		return nil
	}
	hs, err := partition.ValidateBatches(recs, 1<<30)
	if err != nil {
		t.Fatalf("fetched records are not whole batches: %v", err)
	}
	return hs
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err == nil {
		return true
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return false
}

// emptyImage has the brokers of imageWith and no topics.
func emptyImage() *cluster.Image {
	im := imageWith(1, 0, 1)
	im.Topics = map[string]*cluster.TopicInfo{}
	im.IDs = map[cluster.TopicID]string{}
	return im
}

// imageWith returns an image holding one single-partition topic "t" with
// the given leader, leader epoch and replicas.
func imageWith(leader, epoch int32, replicas ...int32) *cluster.Image {
	top := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{1}, Partitions: []cluster.PartitionInfo{{
		Partition: 0, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: replicas, ISR: replicas,
	}}}
	return &cluster.Image{
		ClusterID: "fake-cluster", ControllerID: nodeID,
		Brokers: map[int32]cluster.BrokerInfo{1: {NodeID: 1, Host: "127.0.0.1", Port: 9092}, 2: {NodeID: 2, Host: "127.0.0.1", Port: 9093}},
		Topics:  map[string]*cluster.TopicInfo{"t": top},
		IDs:     map[cluster.TopicID]string{top.ID: "t"},
	}
}

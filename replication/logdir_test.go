package replication_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// A broker with two log dirs, one of which fails on a write: its
// partition answers the storage error from then on, without being
// recreated elsewhere by later metadata, and the other dir's partition
// is served as before.
func TestFailedLogDirPartitionsAnswerStorageErrorOthersKeepServing(t *testing.T) {
	var failD1 atomic.Bool
	s, inD1, inD2, handled := twoLogDirs(t, func(op, name string) error {
		if failD1.Load() && op == "write" && strings.HasPrefix(name, "/d1/") {
			return syscall.ENOSPC
		}
		return nil
	})
	rm, logs := s.rm, s.logs
	mustProduce(t, rm, inD1, testkit.SimpleBatch(2, 1, 10))
	mustProduce(t, rm, inD2, testkit.SimpleBatch(2, 1, 10))

	failD1.Store(true)
	_, err := rm.Produce(context.Background(), inD1, testkit.SimpleBatch(1, 1, 10), -1, time.Second)
	if !errors.Is(err, partition.ErrStorage) && !errors.Is(err, replication.ErrStorage) {
		t.Fatalf("produce to a full log dir: %v, want a storage error", err)
	}
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("log dir failure not handled")
	}
	if _, err := rm.Produce(context.Background(), inD1, testkit.SimpleBatch(1, 1, 10), -1, time.Second); !errors.Is(err, replication.ErrStorage) {
		t.Fatalf("produce to a partition in the offline dir: %v, want ErrStorage", err)
	}
	res := rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20,
		Partitions: []replication.FetchPartition{{TP: inD1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}, {TP: inD2, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}})
	if !errors.Is(res[0].Err, replication.ErrStorage) {
		t.Fatalf("fetch from the offline partition: %v, want ErrStorage", res[0].Err)
	}
	if res[1].Err != nil || len(res[1].Records) == 0 {
		t.Fatalf("fetch from the healthy partition: %v, %d bytes", res[1].Err, len(res[1].Records))
	}

	// Later metadata (a new topic) neither revives nor recreates it.
	s.createTopic(t, "u", 1, nil)
	eventually(t, "log of u", func() bool { return logs.Get(tp("u", 0)) != nil })
	if d, _ := logs.DirOf(tp("u", 0)); d != "/d2" {
		t.Fatalf("new partition placed in %s, want the online dir /d2", d)
	}
	if _, err := rm.Produce(context.Background(), inD1, testkit.SimpleBatch(1, 1, 10), -1, time.Second); !errors.Is(err, replication.ErrStorage) {
		t.Fatalf("produce after more metadata: %v, want ErrStorage", err)
	}
	if d, _ := logs.DirOf(inD1); d != "/d1" || logs.Get(inD1) != nil {
		t.Fatalf("offline partition moved to %s", d)
	}
	mustProduce(t, rm, inD2, testkit.SimpleBatch(2, 1, 10))
	mustProduce(t, rm, tp("u", 0), testkit.SimpleBatch(2, 1, 10))
}

// twoLogDirs starts a replica manager over two log dirs, /d1 and /d2, of an
// in-memory file system failing as inject says, and creates topic t with a
// partition in each. handled receives each dir whose failure the manager
// handled.
func twoLogDirs(t *testing.T, inject func(op, name string) error) (s *stack, inD1, inD2 partition.TopicPartition, handled chan string) {
	t.Helper()
	ctrl := openController(t, testClusterConfig(), filepath.Join(t.TempDir(), "meta"))
	efs := &partition.ErrorFS{FS: partition.NewMemFS(), Inject: inject}
	configFor := func(topic string) partition.Config {
		im := ctrl.Image()
		return replication.LogConfig(im, im.Topics[topic], nodeID, ctrl.BrokerDefaults())
	}
	logs, err := partition.OpenManager(efs, partition.ManagerConfig{
		Dirs: []string{"/d1", "/d2"}, NodeID: nodeID, ClusterID: ctrl.Image().ClusterID, Defaults: partition.DefaultConfig(),
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour, FlushSchedulerInterval: time.Hour,
	}, configFor, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, ctrl)
	handled = make(chan string, 1)
	logs.OnLogDirFailure(func(dir string, _ error) {
		rm.HandleLogDirFailure(dir)
		handled <- dir
	})
	s = &stack{ctrl: ctrl, logs: logs, rm: rm}
	s.createTopic(t, "t", 2, nil)
	eventually(t, "logs of t", func() bool {
		return rm.Get(tp("t", 0)) != nil && rm.Get(tp("t", 1)) != nil && logs.Get(tp("t", 0)) != nil && logs.Get(tp("t", 1)) != nil
	})
	inD1, inD2 = tp("t", 0), tp("t", 1)
	if d, _ := logs.DirOf(inD1); d != "/d1" {
		inD1, inD2 = inD2, inD1
	}
	return s, inD1, inD2, handled
}

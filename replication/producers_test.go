package replication_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
	"github.com/rs/zerolog"
)

// idemBatch is a producer's batch of n records with producer id, epoch
// and base sequence set.
func idemBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := testkit.SimpleBatch(n, 1000, 8)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	testkit.FixCRC(b)
	return b
}

func produceIdem(rm *replication.Manager, p partition.TopicPartition, b []byte) (partition.AppendInfo, error) {
	return rm.Produce(context.Background(), p, append([]byte(nil), b...), -1, 5*time.Second)
}

func TestRule9_LeaderAnswersRetryWithOriginalOffsets(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	first, err := produceIdem(s.rm, p, idemBatch(3, 7, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := produceIdem(s.rm, p, idemBatch(2, 7, 0, 3)); err != nil {
		t.Fatal(err)
	}
	leo := s.rm.Get(p).Log().LogEndOffset()
	retry, err := produceIdem(s.rm, p, idemBatch(3, 7, 0, 0))
	if err != nil {
		t.Fatalf("retry refused: %v", err)
	}
	if retry.FirstOffset != first.FirstOffset || retry.LastOffset != first.LastOffset {
		t.Fatalf("retry answered %d-%d, original %d-%d", retry.FirstOffset, retry.LastOffset, first.FirstOffset, first.LastOffset)
	}
	if got := s.rm.Get(p).Log().LogEndOffset(); got != leo {
		t.Fatalf("retry appended: LEO %d -> %d", leo, got)
	}
}

func TestRule9_LeaderRefusesGapsAndOldEpochs(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	if _, err := produceIdem(s.rm, p, idemBatch(3, 7, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := produceIdem(s.rm, p, idemBatch(1, 7, 1, 5)); !errors.Is(err, idempotent.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := produceIdem(s.rm, p, idemBatch(1, 7, 0, 3)); !errors.Is(err, idempotent.ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	if got := s.rm.Get(p).Log().LogEndOffset(); got != 3 {
		t.Fatalf("refused batches were appended: LEO %d", got)
	}
}

// The state comes back after a restart, from the snapshot a clean close
// writes and, after a crash, from the log alone.
func TestRule9_ProducerStateSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := "crash"
		if clean {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			s := newStack(t)
			s.createTopic(t, "t", 1, nil)
			p := tp("t", 0)
			if _, err := produceIdem(s.rm, p, testkit.SimpleBatch(4, 1000, 8)); err != nil {
				t.Fatal(err)
			}
			first, err := produceIdem(s.rm, p, idemBatch(3, 9, 2, 10))
			if err != nil {
				t.Fatal(err)
			}
			if clean {
				s.rm.Close()
			}
			if err := s.logs.Close(); err != nil {
				t.Fatal(err)
			}
			s.logs = openLogs(t, partition.OSFS(), s.logDir, s.ctrl)
			t.Cleanup(func() { s.logs.Close() })
			rm := newManager(t, s.logs, s.ctrl)
			retry, err := produceIdem(rm, p, idemBatch(3, 9, 2, 10))
			if err != nil || retry.FirstOffset != first.FirstOffset {
				t.Fatalf("retry after restart: offset %d err %v, original %d", retry.FirstOffset, err, first.FirstOffset)
			}
			if _, err := produceIdem(rm, p, idemBatch(1, 9, 2, 14)); !errors.Is(err, idempotent.ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			if _, err := produceIdem(rm, p, idemBatch(1, 9, 2, 13)); err != nil {
				t.Fatalf("next batch after restart: %v", err)
			}
		})
	}
}

// Followers keep producer state as they replicate, so a new leader
// recognises a retry of a batch the old leader wrote and acknowledged.
func TestRule9_NewLeaderDeduplicatesRetryWrittenUnderOldLeader(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	old := c.leader("t")
	p := tp("t", 0)
	first, err := produceIdem(old.rm, p, idemBatch(5, 42, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.waitISR("t", 1, 2, 3)
	old.stop()
	c.fence(old.id)
	nl := c.leader("t")
	if nl.id == old.id {
		t.Fatal("leadership did not move")
	}
	var retry partition.AppendInfo
	err = testkit.Poll(10*time.Second, func() error {
		retry, err = produceIdem(nl.rm, p, idemBatch(5, 42, 0, 0))
		return err
	})
	if err != nil {
		t.Fatalf("retry at the new leader: %v", err)
	}
	if retry.FirstOffset != first.FirstOffset {
		t.Fatalf("retry at the new leader got offset %d, original %d: duplicated", retry.FirstOffset, first.FirstOffset)
	}
	if leo := nl.log("t").LogEndOffset(); leo != 5 {
		t.Fatalf("new leader's LEO %d, want 5", leo)
	}
}

// The producer state is snapshotted when the log rolls a segment, so that
// a restart after a crash reads only the log past the last roll.
func TestRule9_ProducerStateSnapshottedAtSegmentRoll(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, map[string]string{"segment.bytes": "1024"})
	p := tp("t", 0)
	seq := int32(0)
	for range 20 {
		if _, err := produceIdem(s.rm, p, idemBatch(4, 11, 0, seq)); err != nil {
			t.Fatal(err)
		}
		seq += 4
	}
	lg := s.rm.Get(p).Log()
	if lg.NumSegments() < 3 {
		t.Fatalf("log has %d segments; the test needs rolls", lg.NumSegments())
	}
	end, data, ok, err := lg.LatestProducerSnapshot()
	if err != nil || !ok {
		t.Fatalf("no producer snapshot after %d segment rolls (err %v)", lg.NumSegments()-1, err)
	}
	snap, err := idempotent.UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if e := snap.Entry(11); e == nil || end <= 0 || end > lg.LogEndOffset() {
		t.Fatalf("snapshot at %d (LEO %d) lacks producer 11: %+v", end, lg.LogEndOffset(), e)
	}
}

// producer.id.expiration.ms runs on the manager's clock: a producer idle
// for longer by that clock is forgotten, so its next batch is taken as
// from a new producer whatever its sequence.
func TestRule9_ProducerExpiryFollowsTheInjectedClock(t *testing.T) {
	s := newStack(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s.rm.Close()
	rm, err := replication.NewManager(s.logs, s.ctrl, zerolog.Nop(), replication.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	eventually(t, "the manager leads t-0", func() bool { return rm.Get(p) != nil && rm.Get(p).IsLeader() })
	if _, err := produceIdem(rm, p, idemBatch(3, 7, 0, 0)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(replication.DefaultConfig().ProducerIDExpiration + time.Hour)
	mu.Unlock()
	if _, err := produceIdem(rm, p, idemBatch(1, 8, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := produceIdem(rm, p, idemBatch(1, 7, 0, 10)); err != nil {
		t.Fatalf("batch of a producer idle past producer.id.expiration.ms: %v, want it accepted as from a new producer", err)
	}
}

// A Close with nothing appended since the producer state was loaded from
// its snapshot leaves that snapshot as it is (Kafka skips it too): a
// restart of a broker with thousands of partitions does not rewrite and
// fsync thousands of unchanged files.
func TestRule9_CloseKeepsUnchangedProducerSnapshot(t *testing.T) {
	s := newStack(t)
	s.createTopic(t, "t", 1, nil)
	p := tp("t", 0)
	if _, err := produceIdem(s.rm, p, idemBatch(3, 7, 0, 0)); err != nil {
		t.Fatal(err)
	}
	s.rm.Close()
	snapFile := func() os.FileInfo {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(s.logDir, "t-0", "*.snapshot"))
		if err != nil || len(names) != 1 {
			t.Fatalf("snapshots %v (%v), want one", names, err)
		}
		fi, err := os.Stat(names[0])
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := snapFile()

	rm := newManager(t, s.logs, s.ctrl)
	eventually(t, "the new manager leads t-0", func() bool { return rm.Get(p) != nil && rm.Get(p).IsLeader() })
	// A retry is answered from the producer state, loaded from the
	// snapshot, and appends nothing.
	if _, err := produceIdem(rm, p, idemBatch(3, 7, 0, 0)); err != nil {
		t.Fatal(err)
	}
	rm.Close()
	if after := snapFile(); !os.SameFile(before, after) {
		t.Fatalf("unchanged producer snapshot %s rewritten at Close", after.Name())
	}
}

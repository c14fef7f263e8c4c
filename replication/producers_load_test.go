package replication_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// slowDisk is an in-memory disk whose log and snapshot reads block, once
// armed, until released: a producer-state rebuild reading a large log.
type slowDisk struct {
	fs       *partition.ErrorFS
	armed    atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

func newSlowDisk(t *testing.T) *slowDisk {
	return newSlowDiskFor(t, partition.NewMemFS(), func(op, name string) bool {
		return op == "read" && (strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".snapshot"))
	})
}

// newSlowDiskFor blocks, once armed, the operations match selects.
func newSlowDiskFor(t *testing.T, fs partition.FS, match func(op, name string) bool) *slowDisk {
	d := &slowDisk{entered: make(chan struct{}, 1), release: make(chan struct{})}
	d.fs = &partition.ErrorFS{FS: fs, Inject: func(op, name string) error {
		if d.armed.Load() && match(op, name) {
			select {
			case d.entered <- struct{}{}:
			default:
			}
			<-d.release
		}
		return nil
	}}
	t.Cleanup(d.unblock)
	return d
}

func (d *slowDisk) unblock() { d.released.Do(func() { close(d.release) }) }

// waitEntered waits until a read blocked. The watchdog only turns a hang
// into a failure; nothing here measures time.
func (d *slowDisk) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		d.unblock()
		t.Fatal("nothing reached the slow disk")
	}
}

// restartedLeader hosts "t" (led here, sole replica) with producer 7's
// first batch in the log, then restarts the replica manager with the
// disk armed, so the new one must rebuild the producer state from disk.
func restartedLeader(t *testing.T, d *slowDisk) (*fake.Meta, *replication.Manager, partition.AppendInfo) {
	t.Helper()
	meta := fake.NewMeta(nodeID, imageWith(1, 0, 1))
	logs := openLogs(t, d.fs, "/logs", meta)
	t.Cleanup(func() { logs.Close() })
	rm := newManager(t, logs, meta)
	first, err := produceIdem(rm, tp("t", 0), idemBatch(3, 7, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rm.Close()
	d.armed.Store(true)
	rm = newManager(t, logs, meta)
	// Registered last, so it runs first: nothing stays blocked at Close.
	t.Cleanup(d.unblock)
	return meta, rm, first
}

// Issue 11 item 3: a producer-state rebuild never holds a lock a role
// change waits for. With the rebuild stuck on the disk, metadata making
// this broker a follower is applied at once; the idempotent produce that
// waited for the state then gets NOT_LEADER_OR_FOLLOWER.
func TestRoleChangeDoesNotWaitForProducerStateRebuild(t *testing.T) {
	d := newSlowDisk(t)
	meta, rm, _ := restartedLeader(t, d)
	produced := make(chan error, 1)
	go func() {
		_, err := produceIdem(rm, tp("t", 0), idemBatch(1, 7, 0, 3))
		produced <- err
	}()
	d.waitEntered(t)

	applied := make(chan struct{})
	go func() {
		meta.Publish(imageWith(2, 1, 2, 1))
		close(applied)
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		d.unblock()
		<-applied
		t.Fatal("the role change waited for the producer-state rebuild")
	}
	if rm.Get(tp("t", 0)).IsLeader() {
		t.Fatal("still leader after the role change")
	}
	d.unblock()
	if err := <-produced; !errors.Is(err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("produce that waited across the role change: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}

// Issue 11 item 3: until its producer state is loaded, a leader answers
// an idempotent produce with a retriable NOT_LEADER_OR_FOLLOWER (after at
// most the produce's timeout) rather than appending without it; other
// produces go on. Once loaded, a retry is recognised.
func TestLeaderRefusesIdempotentProduceRetriablyUntilProducerStateLoaded(t *testing.T) {
	d := newSlowDisk(t)
	_, rm, first := restartedLeader(t, d)
	p := tp("t", 0)

	res := make(chan error, 1)
	go func() {
		_, err := rm.Produce(context.Background(), p, idemBatch(3, 7, 0, 0), 1, time.Millisecond)
		res <- err
	}()
	d.waitEntered(t)
	select {
	case err := <-res:
		if !errors.Is(err, replication.ErrProducerStateLoading) || !errors.Is(err, replication.ErrNotLeaderOrFollower) {
			t.Fatalf("idempotent produce while loading: %v, want a retriable NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(10 * time.Second):
		d.unblock()
		<-res
		t.Fatal("the idempotent produce waited for the rebuild past its timeout")
	}
	if _, err := rm.Produce(context.Background(), p, testkit.SimpleBatch(1, 1000, 1), 1, time.Second); err != nil {
		t.Fatalf("plain produce while loading: %v", err)
	}
	if got := rm.Get(p).Log().LogEndOffset(); got != first.LastOffset+2 {
		t.Fatalf("LEO %d, want %d: the refused batch must not be appended", got, first.LastOffset+2)
	}

	d.unblock()
	retry, err := produceIdem(rm, p, idemBatch(3, 7, 0, 0))
	if err != nil || retry.FirstOffset != first.FirstOffset {
		t.Fatalf("retry once loaded: offset %d (%v), want the original %d", retry.FirstOffset, err, first.FirstOffset)
	}
}

// Issue 11 item 3: followers keep the producer state as they replicate
// (Kafka's do), so a failover needs no rebuild: with every log and
// snapshot read blocked, the new leader recognises a retry of a batch the
// old leader wrote at once.
func TestNewLeaderServesIdempotentProduceWithoutRebuilding(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	f := c.nodes[2]
	f.stop()
	d := newSlowDiskFor(t, f.fs, func(op, name string) bool {
		return op == "read" && (strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".snapshot"))
	})
	f.wrapFS = func(partition.FS) partition.FS { return d.fs }
	f.start()
	c.createTopic("t", []int32{1, 2}, nil)
	p := tp("t", 0)
	first, err := produceIdem(c.nodes[1].rm, p, idemBatch(3, 7, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the follower loaded its producer state", func() bool {
		fp := f.rm.Get(p)
		return fp != nil && replication.ProducerStateLoaded(fp) && fp.Log().LogEndOffset() == 3
	})
	d.armed.Store(true)
	c.nodes[1].stop()
	c.fence(1)
	if !f.rm.Get(p).IsLeader() {
		t.Fatal("node 2 did not become leader")
	}
	res := make(chan error, 1)
	var retry partition.AppendInfo
	go func() {
		var err error
		retry, err = produceIdem(f.rm, p, idemBatch(3, 7, 0, 0))
		res <- err
	}()
	select {
	case err := <-res:
		if err != nil || retry.FirstOffset != first.FirstOffset {
			t.Fatalf("retry at the new leader: offset %d (%v), want the original %d", retry.FirstOffset, err, first.FirstOffset)
		}
	case <-d.entered:
		d.unblock()
		<-res
		t.Fatal("the new leader rebuilt its producer state from disk")
	case <-time.After(10 * time.Second):
		d.unblock()
		t.Fatal("the retry at the new leader did not complete")
	}
}

package replication_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Issue 11 item 8: no fsync under the producer-state lock. An idempotent
// append whose fsync hangs (flush.messages, or the producer-state snapshot
// written at a segment roll) must not keep others from the partition's
// producer state: here DescribeProducers and the transaction check of a
// produce, which take that lock.
func TestNoFsyncUnderProducerStateLock(t *testing.T) {
	for _, c := range []struct {
		name    string
		configs map[string]string
		match   func(op, name string) bool
	}{
		{"flush.messages", map[string]string{"flush.messages": "1"}, func(op, name string) bool {
			return op == "sync" && strings.Contains(name, "/t-0/")
		}},
		{"snapshot at segment roll", map[string]string{"segment.bytes": "1024"}, func(op, name string) bool {
			return op == "sync" && strings.Contains(name, ".snapshot")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newSlowDiskFor(t, partition.NewMemFS(), c.match)
			img := imageWith(1, 0, 1)
			img.Topics["t"].Configs = c.configs
			meta := fake.NewMeta(nodeID, img)
			logs := openLogs(t, d.fs, "/logs", meta)
			t.Cleanup(func() { logs.Close() })
			rm := newManager(t, logs, meta)
			t.Cleanup(d.unblock)
			p := tp("t", 0)
			if _, err := produceIdem(rm, p, idemBatch(1, 7, 0, 0)); err != nil {
				t.Fatal(err)
			}
			d.armed.Store(true)
			produced := make(chan error, 1)
			go func() {
				// Produce until an append reaches the slow disk (for the
				// snapshot, one that rolls a segment) and is let go.
				for seq := int32(1); ; seq += 4 {
					_, err := produceIdem(rm, p, idemBatch(4, 7, 0, seq))
					select {
					case <-d.release:
						produced <- err
						return
					default:
					}
					if err != nil {
						produced <- err
						return
					}
				}
			}()
			d.waitEntered(t)

			described := make(chan error, 1)
			go func() {
				_, err := rm.Producers(p)
				rm.InTxn(p, 7, 0)
				described <- err
			}()
			select {
			case err := <-described:
				if err != nil {
					t.Fatalf("DescribeProducers during the fsync: %v", err)
				}
			case <-time.After(10 * time.Second):
				d.unblock()
				t.Fatal("the producer state stayed locked across an fsync")
			}
			d.unblock()
			if err := <-produced; err != nil {
				t.Fatalf("produce: %v", err)
			}
			if c.configs["flush.messages"] == "1" {
				// The fsync moved out of the lock, not out of the produce.
				lg := rm.Get(p).Log()
				if _, err := produceIdem(rm, p, idemBatch(1, 7, 0, lastSeq(rm, p)+1)); err != nil {
					t.Fatal(err)
				}
				if rp, leo := lg.RecoveryPoint(), lg.LogEndOffset(); rp != leo {
					t.Fatalf("flush.messages=1 produce returned with recovery point %d below LEO %d", rp, leo)
				}
			}
		})
	}
}

// Issue 11 item 8: no fsync under the fetcher's lock. A follower whose
// disk hangs in an fsync of one partition's append (flush.messages=1) must
// still apply a role change of another partition followed through the
// same fetcher: taking it away from the fetcher must not wait for the
// fsync.
func TestNoFsyncUnderFetcherLock(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	f := c.nodes[2]
	f.stop()
	d := newSlowDiskFor(t, f.fs, func(op, name string) bool {
		return op == "sync" && strings.Contains(name, "/a-0/")
	})
	f.wrapFS = func(partition.FS) partition.FS { return d.fs }
	f.start()
	c.createTopic("a", []int32{1, 2}, map[string]string{"flush.messages": "1"})
	c.createTopic("b", []int32{1, 2}, nil)
	l := c.leader("a")
	l.mustProduce("a", "x", -1)
	l.mustProduce("b", "y", -1)
	d.armed.Store(true)
	l.mustProduce("a", "z", 1)
	d.waitEntered(t) // the follower's fetcher is in the fsync of a's append

	applied := make(chan struct{})
	go func() {
		c.script("b", func(pi *cluster.PartitionInfo) {
			pi.Leader = 2
			pi.LeaderEpoch++
			pi.PartitionEpoch++
		})
		close(applied)
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		d.unblock()
		<-applied
		t.Fatal("a role change of another partition waited for the fetcher's fsync")
	}
	if !f.rm.Get(tp("b", 0)).IsLeader() {
		t.Fatal("node 2 does not lead b after the change")
	}
	d.unblock()
}

// lastSeq is producer 7's last sequence on p.
func lastSeq(rm *replication.Manager, p partition.TopicPartition) int32 {
	ps, err := rm.Producers(p)
	if err != nil || len(ps) == 0 {
		return -1
	}
	return ps[0].LastSequence
}

package replication_test

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// uncachedFS counts the uncached writes to segment files of a broker's
// disk (an FS over the in-memory one whose files take them).
type uncachedFS struct {
	partition.FS
	n atomic.Int64
}

type uncachedFile struct {
	partition.File
	fs  *uncachedFS
	seg bool
}

func (u *uncachedFS) OpenFile(name string, flag int, perm os.FileMode) (partition.File, error) {
	f, err := u.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return uncachedFile{f, u, strings.HasSuffix(name, ".log")}, nil
}

func (f uncachedFile) WriteUncached(p []byte) (int, bool, error) {
	if f.seg {
		f.fs.n.Add(1)
	}
	n, err := f.File.Write(p)
	return n, true, err
}

// A follower writes what it replicates uncached (nothing reads it there),
// unless replica.selector.class lets consumers fetch from followers, or
// gokafka.replica.write.uncached.enable is off; either way it holds every
// record.
func TestFollowerWritesUncachedUnlessConsumersMayReadFromIt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		edit         func(*replication.Config)
		wantUncached bool
	}{
		{"default", func(*replication.Config) {}, true},
		{"replica selector", func(c *replication.Config) { c.ReplicaSelectorClass = replication.RackAwareReplicaSelector }, false},
		{"turned off", func(c *replication.Config) { c.FollowerWritesUncached = false }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testReplConfig(10 * time.Second)
			tc.edit(&cfg)
			c := newSimCluster(t, cfg, 1, 2)
			f := c.nodes[2]
			f.stop()
			disk := &uncachedFS{}
			f.wrapFS = func(fs partition.FS) partition.FS { disk.FS = fs; return disk }
			f.start()
			c.createTopic("t", []int32{1, 2}, nil)
			l := c.leader("t")
			if l.id != 1 {
				t.Fatalf("leader %d, want 1", l.id)
			}
			// Appends big enough to go uncached (a follower's small
			// appends do not).
			a, b := strings.Repeat("a", 200<<10), strings.Repeat("b", 200<<10)
			l.mustProduce("t", a, -1)
			l.mustProduce("t", b, -1)
			c.waitConverged("t", a, b)
			if got := disk.n.Load() > 0; got != tc.wantUncached {
				t.Fatalf("follower's uncached segment writes: %d, want them %v", disk.n.Load(), tc.wantUncached)
			}
		})
	}
}

package cluster

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// lastSnapshotIndex is the index of the newest snapshot raft holds for c.
func lastSnapshotIndex(t *testing.T, c *Controller) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(c.log.(*raftLog).r.Stats()["last_snapshot_index"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// snapshotsOnDisk lists the snapshots stored in a closed quorum's dir.
func snapshotsOnDisk(t *testing.T, dir string) []*raft.SnapshotMeta {
	t.Helper()
	st, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	metas, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	return metas
}

// awaitSnapshot waits (at most a few seconds: nothing else is running)
// until c holds a snapshot of index at least min.
func awaitSnapshot(t *testing.T, c *Controller, min uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if n := lastSnapshotIndex(t, c); n >= min && n > 0 {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no metadata snapshot taken (last snapshot index %d)", lastSnapshotIndex(t, c))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func openSnapshotQuorum(t *testing.T, dir string, qc QuorumConfig) *Controller {
	t.Helper()
	qc.Dir, qc.SessionTimeout = dir, time.Hour
	c, err := Open(context.Background(), testConfig(), qc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Kafka snapshots the metadata log by size
// (metadata.log.max.record.bytes.between.snapshots), not only by count:
// a few entries that each change thousands of partitions hold megabytes
// that every restart would replay. Two entries over the limit are far
// below raft's count threshold, yet they are snapshotted.
func TestQuorum_SnapshotsOnceAppliedEntriesExceedMaxRecordBytes(t *testing.T) {
	dir := t.TempDir()
	c := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotBytes: 32 << 10, SnapshotInterval: -1})
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	if n := lastSnapshotIndex(t, c); n != 0 {
		t.Fatalf("snapshot at %d before any large entry", n)
	}
	// Each entry creates 400 partitions: well over 32 KiB of commands.
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 400, ReplicationFactor: 1})
	mustCreate(t, c, TopicSpec{Name: "b", NumPartitions: 400, ReplicationFactor: 1})
	awaitSnapshot(t, c, 1)

	// The snapshot restores: a restart sees both topics.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotBytes: 32 << 10, SnapshotInterval: -1})
	for _, name := range []string{"a", "b"} {
		if tp := c2.Image().Topic(name); tp == nil || len(tp.Partitions) != 400 {
			t.Fatalf("topic %s after restart: %+v", name, tp)
		}
	}
}

// Entries below the size limit are snapshotted once
// metadata.log.max.snapshot.interval.ms has passed since the last
// snapshot, as in Kafka.
func TestQuorum_SnapshotsNewEntriesAfterMaxSnapshotInterval(t *testing.T) {
	c := openSnapshotQuorum(t, t.TempDir(), QuorumConfig{SnapshotInterval: 20 * time.Millisecond})
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	applied := c.log.AppliedIndex()
	awaitSnapshot(t, c, applied)
}

// A clean shutdown leaves a snapshot of everything applied, so the next
// start restores it rather than replaying the log since the last one; a
// killed node leaves none (it cannot), and replays.
func TestQuorum_CleanShutdownLeavesASnapshotKillDoesNot(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run("kill="+strconv.FormatBool(kill), func(t *testing.T) {
			dir := t.TempDir()
			c := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotInterval: -1})
			if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 3, ReplicationFactor: 1})
			applied := c.log.AppliedIndex()
			if kill {
				c.Kill()
			} else if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			metas := snapshotsOnDisk(t, dir)
			if kill {
				if len(metas) != 0 {
					t.Fatalf("killed node left snapshot at %d", metas[0].Index)
				}
			} else if len(metas) == 0 || metas[0].Index < applied {
				t.Fatalf("snapshots after clean shutdown: %v, want one at %d or later", metas, applied)
			}
			c2 := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotInterval: -1})
			if tp := c2.Image().Topic("a"); tp == nil || len(tp.Partitions) != 3 {
				t.Fatalf("topic after restart: %+v", tp)
			}
		})
	}
}

// A starting broker registers fenced (RegisterFenced) before it takes up
// its partitions, and is unfenced only when it asks (Unfence), as Kafka's
// broker is: in between, the other brokers know its incarnation (they
// accept its replica fetches) but nothing is led by it.
func TestRegisterFencedLeadsNothingUntilUnfence(t *testing.T) {
	c := openQuorum(t, testConfig(), t.TempDir())
	ctx := context.Background()
	if err := c.RegisterFenced(ctx, "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	b, ok := c.Image().Brokers[1]
	if !ok || !b.Fenced || b.Incarnation != c.Incarnation() {
		t.Fatalf("after RegisterFenced: %+v (registered %v), want this incarnation, fenced", b, ok)
	}
	if err := c.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
	if b := c.Image().Brokers[1]; b.Fenced {
		t.Fatal("still fenced after Unfence")
	}
	top := mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 1})
	if top.Partitions[0].Leader != 1 {
		t.Fatalf("leader %d after Unfence, want 1", top.Partitions[0].Leader)
	}
}

// Unfence returns only once this node's watchers (the replica manager,
// which takes up the leaderships the unfencing gives back in the same
// entry) have been given the unfenced image: a broker serves once it
// leads what the metadata says it leads. A restarted single broker
// answered a produce right after it started serving with
// NOT_LEADER_OR_FOLLOWER while its replicas had not yet acted on the image.
func TestUnfenceWaitsForTheWatchersToActOnIt(t *testing.T) {
	c := openQuorum(t, testConfig(), t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.RegisterFenced(ctx, "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	// Released on every way out: a watcher still held would hold the
	// quorum's Close.
	defer releaseOnce.Do(func() { close(release) })
	var acted atomic.Bool
	c.Watch(func(_, next *Image) {
		if b, ok := next.Brokers[1]; ok && !b.Fenced && !acted.Load() {
			<-release
			acted.Store(true)
		}
	})
	done := make(chan error, 1)
	go func() { done <- c.Unfence(ctx) }()
	// The unfenced image is applied while the watcher holds it.
	if err := c.awaitLocal(ctx, func(im *Image) bool { return !im.Brokers[1].Fenced }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Unfence returned (%v) before the watchers acted on the unfenced image", err)
	case <-time.After(200 * time.Millisecond):
	}
	releaseOnce.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !acted.Load() {
		t.Fatal("Unfence returned before the watcher acted")
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// proposeLarge appends one entry of about size bytes to c's log: a new
// value of one cluster-wide broker config, so the state stays small while
// the log grows.
func proposeLarge(t *testing.T, c *Controller, i, size int) {
	t.Helper()
	v := fmt.Sprintf("%d-%s", i, strings.Repeat("x", size))
	cmd := &Command{Type: CmdSetBrokerConfigs, Configs: map[string]string{"gokafka.test.filler": v}}
	if err := c.log.Propose(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
}

// snapshotNow has c's raft snapshot everything applied and compact its
// log, and waits for it (and so for any snapshot under way).
func snapshotNow(t *testing.T, c *Controller) {
	t.Helper()
	if err := c.log.(*raftLog).r.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		t.Fatal(err)
	}
}

// keptLog is what c's log store holds: its first and last index, and the
// entries and bytes at or before index upTo.
func keptLog(t *testing.T, c *Controller, upTo uint64) (first, last uint64, entries int, bytes int64) {
	t.Helper()
	store := c.log.(*raftLog).store
	first, err := store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err = store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i <= min(last, upTo) && i > 0; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d of %d-%d: %v", i, first, last, err)
		}
		entries++
		bytes += int64(len(l.Data))
	}
	return first, last, entries, bytes
}

// Kafka deletes the metadata log before its latest snapshot beyond
// metadata.max.retention.bytes. Raft on its own keeps the last 10,240
// entries after every snapshot, which with entries of a megabyte (a topic
// of 10,000 partitions) is gigabytes; here the entries kept before the
// snapshot hold at most the limit, and a restart still restores the
// state.
func TestQuorum_LogBeforeSnapshotStaysWithinMaxRetentionBytes(t *testing.T) {
	const limit = 256 << 10
	const entry = 8 << 10
	dir := t.TempDir()
	qc := QuorumConfig{SnapshotBytes: 64 << 10, SnapshotInterval: -1, RetentionBytes: limit}
	c := openSnapshotQuorum(t, dir, qc)
	const n = 200 // 1.6 MB of entries: six times the limit
	for i := range n {
		proposeLarge(t, c, i, entry)
	}
	snapshotNow(t, c)
	snap := lastSnapshotIndex(t, c)
	first, last, entries, bytes := keptLog(t, c, snap)
	if bytes > limit {
		t.Fatalf("log %d-%d keeps %d entries of %d bytes up to the snapshot at %d, want at most %d bytes", first, last, entries, bytes, snap, limit)
	}
	if entries < minTrailingLogs || bytes < limit-2*entry {
		t.Fatalf("log %d-%d keeps %d entries of %d bytes up to the snapshot at %d: deleted more than the limit asks", first, last, entries, bytes, snap)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openSnapshotQuorum(t, dir, qc)
	if got := c2.Image().BrokerConfigs[""]["gokafka.test.filler"]; !strings.HasPrefix(got, fmt.Sprintf("%d-", n-1)) {
		t.Fatalf("after restart the last entry is not applied (value %.10q)", got)
	}
}

// Kafka also deletes the log before its latest snapshot once it is older
// than metadata.max.retention.ms; only the few newest entries stay, for a
// follower just behind.
func TestQuorum_LogBeforeSnapshotOlderThanMaxRetentionMsIsDeleted(t *testing.T) {
	var skew atomic.Int64
	cfg := testConfig()
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	qc := QuorumConfig{Dir: t.TempDir(), SessionTimeout: time.Hour, SnapshotInterval: -1, RetentionBytes: -1, RetentionTime: time.Hour}
	c, err := Open(context.Background(), cfg, qc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i := range 3 * minTrailingLogs {
		proposeLarge(t, c, i, 16)
	}
	// Within the hour nothing is too old: raft's 10,240 entries stay.
	snapshotNow(t, c)
	if first, last, entries, _ := keptLog(t, c, lastSnapshotIndex(t, c)); entries < 3*minTrailingLogs {
		t.Fatalf("log %d-%d keeps %d entries before an hour has passed, want all of them", first, last, entries)
	}

	skew.Store(int64(2 * time.Hour))
	proposeLarge(t, c, 3*minTrailingLogs, 16)
	snapshotNow(t, c)
	if first, last, entries, _ := keptLog(t, c, lastSnapshotIndex(t, c)); entries > minTrailingLogs {
		t.Fatalf("log %d-%d keeps %d entries two hours on, want the newest %d", first, last, entries, minTrailingLogs)
	}
}

// A voter that was down while the log it lacks was deleted (the rest of
// the quorum snapshotted and kept only metadata.max.retention.bytes of
// log) catches up when it comes back, from the leader's snapshot.
func TestQuorum_VoterBehindCompactedLogCatchesUpFromSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc := QuorumConfig{SessionTimeout: time.Hour, SnapshotBytes: 64 << 10, SnapshotInterval: -1, RetentionBytes: 128 << 10}
	ctrls := openQuorumOf(t, ctx, 3, qc)
	leader := awaitQuorumLeader(t, ctx, ctrls)
	var behind *Controller
	for _, c := range ctrls {
		if c != leader {
			behind = c
			break
		}
	}
	behindLast := behind.log.LastIndex()
	bcfg, bqc := behind.cfg, behind.qc
	if err := behind.Close(); err != nil {
		t.Fatal(err)
	}

	const n = 100
	for i := range n {
		proposeLarge(t, leader, i, 8<<10)
	}
	snapshotNow(t, leader)
	if first, _, _, _ := keptLog(t, leader, 0); first <= behindLast+1 {
		t.Fatalf("leader's log starts at %d: the stopped voter (last entry %d) could catch up from it", first, behindLast)
	}

	back, err := Open(ctx, bcfg, bqc, zerolog.Nop())
	if err != nil {
		t.Fatalf("reopening the voter that was behind: %v", err)
	}
	t.Cleanup(func() { back.Close() })
	want := fmt.Sprintf("%d-", n-1)
	if err := back.awaitLocal(ctx, func(im *Image) bool {
		return strings.HasPrefix(im.BrokerConfigs[""]["gokafka.test.filler"], want)
	}); err != nil {
		t.Fatalf("voter that was behind never applied the last entry: %v", err)
	}
	// It got there by the leader's snapshot (raft records the snapshot
	// just after restoring it).
	awaitSnapshot(t, back, behindLast+1)
}

// A node restarted with a lower metadata.max.retention.bytes bounds the
// log it kept before the restart too: the sizes of entries it did not
// apply since starting are read back from the log.
func TestQuorum_LogKeptBeforeRestartIsBoundAtNextSnapshot(t *testing.T) {
	const limit = 128 << 10
	dir := t.TempDir()
	c := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotInterval: -1, RetentionBytes: -1})
	for i := range 60 {
		proposeLarge(t, c, i, 8<<10)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openSnapshotQuorum(t, dir, QuorumConfig{SnapshotInterval: -1, RetentionBytes: limit})
	if _, _, entries, _ := keptLog(t, c2, lastSnapshotIndex(t, c2)); entries < 60 {
		t.Fatalf("%d entries kept before the restart, want all 60 (no limit then)", entries)
	}
	proposeLarge(t, c2, 60, 8<<10)
	snapshotNow(t, c2)
	snap := lastSnapshotIndex(t, c2)
	if first, last, entries, bytes := keptLog(t, c2, snap); bytes > limit || entries < minTrailingLogs {
		t.Fatalf("log %d-%d keeps %d entries of %d bytes up to the snapshot at %d, want at most %d bytes, at least %d entries", first, last, entries, bytes, snap, limit, minTrailingLogs)
	}
}

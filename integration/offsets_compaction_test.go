package integration

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var offsetCommits = flag.Int("offsets.commits", 1_000_000, "offset commits TestConsumerOffsetsStaysBoundedUnderEndlessCommits writes")

// logBytes is the size of a partition directory's segment files (.log),
// what compaction shrinks; indexes and checkpoints are left out.
func logBytes(t testing.TB, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // retired while we looked
		}
		n += fi.Size()
	}
	return n
}

// TestConsumerOffsetsStaysBoundedUnderEndlessCommits: __consumer_offsets
// is created compacted, so a million offset commits over a hundred
// partitions leave it, once the cleaner has run, within two segments
// (offsets.topic.segment.bytes) on disk instead of the ~100 MB written, and
// the compacted log still loads to the last committed offsets after a
// kill -9. The bound: the active segment (at most one segment) plus the
// cleaned segments, which hold one record per live key.
func TestConsumerOffsetsStaysBoundedUnderEndlessCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("a million commits; skipped with -short")
	}
	const segment = 256 << 10
	b := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
		"GOKAFKA_OFFSETS_TOPIC_SEGMENT_BYTES":  strconv.Itoa(segment),
		"GOKAFKA_LOG_CLEANER_BACKOFF_MS":       "100",
	}})
	const topic, parts, group = "committed", 100, "endless"
	adm := b.admin(t)
	createTopic(t, adm, topic, parts, nil)
	cl := b.client(t)
	ctx := testCtx(t, 10*time.Minute)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("topic id: %v %v", err, td[topic].Err)
	}

	commits := *offsetCommits
	rounds := (commits + parts - 1) / parts
	dir := b.PartitionDir("__consumer_offsets", 0)
	var peak int64
	for round := 0; round < rounds; round++ {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation, req.MemberID = group, -1, ""
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, td[topic].ID // v10 names it by id
		for p := range int32(parts) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(round), -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("commit round %d: %v", round, err)
		}
		for _, p := range resp.Topics[0].Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("commit round %d partition %d: %v", round, p.Partition, err)
			}
		}
		if round%500 == 0 {
			peak = max(peak, logBytes(t, dir))
		}
	}
	written := int64(commits) * 60 // a committed offset's record is about 60 bytes
	t.Logf("%d commits (~%d MB written); peak sampled size %d KB", commits, written>>20, peak>>10)

	bound := int64(2 * segment)
	eventually(t, 2*time.Minute, func() error {
		if n := logBytes(t, dir); n > bound {
			return fmt.Errorf("__consumer_offsets-0 holds %d bytes, bound %d", n, bound)
		}
		return nil
	})
	t.Logf("after cleaning: %d KB (bound %d KB)", logBytes(t, dir)>>10, bound>>10)

	// The compacted log loads to the last commits.
	b.Kill()
	b.start()
	cl2 := b.client(t)
	want := int64(rounds - 1)
	eventually(t, time.Minute, func() error {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		resp, err := req.RequestWith(ctx, cl2)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		got := 0
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if p.Offset != want {
					return fmt.Errorf("partition %d: offset %d after the restart, want %d", p.Partition, p.Offset, want)
				}
				got++
			}
		}
		if got != parts {
			return fmt.Errorf("%d partitions with offsets after the restart, want %d", got, parts)
		}
		return nil
	})
}

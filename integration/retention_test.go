package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countLogSegments counts <offset>.log files in a partition directory.
// Segments renamed for deferred deletion (.log.deleted) no longer count.
func countLogSegments(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n, nil
}

// TestRetentionDeletesOldSegments: with small segments and retention.ms=1000
// the retention task removes old segments and advances the log start offset,
// and a consumer starting at the beginning (or at a deleted offset) begins at
// the new log start offset.
func TestRetentionDeletesOldSegments(t *testing.T) {
	// Small segments are the operator's setting: clients may not set
	// segment.bytes below 1 MiB (KIP-1030).
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS": "200", "GOKAFKA_LOG_SEGMENT_BYTES": "16384"}})
	adm := b.admin(t)
	topic := "retention"
	createTopic(t, adm, topic, 1, map[string]*string{
		"retention.ms": strp("1000"),
	})

	// Small synchronous batches (4 x 1 KB) so segments roll at many
	// boundaries: about 200 KB in total, a dozen segments.
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 3*time.Minute)
	const n = 200
	for i := 0; i < n; i += 4 {
		var rs []*kgo.Record
		for j := i; j < i+4; j++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: randomBytes(1024, uint64(j))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	dir := b.PartitionDir(topic, 0)
	peak, err := countLogSegments(dir)
	if err != nil {
		t.Fatalf("reading partition directory: %v", err)
	}
	t.Logf("%d segments in %s after producing", peak, dir)
	if peak < 3 {
		// Retention may already have run, but 200 KB in 16 KB segments
		// cannot have fewer than 3 files unless segment.bytes was ignored
		// or nearly everything was already deleted; start offsets tell which.
		so := startOffsets(t, adm, topic)
		if so[0] == 0 {
			t.Fatalf("only %d .log files for ~200 KB with segment.bytes=16384 and nothing deleted yet", peak)
		}
	}

	eventually(t, time.Minute, func() error {
		so, err := tryListed(topic, func(ctx context.Context) (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) })
		if err != nil {
			return err
		}
		segs, err := countLogSegments(dir)
		if err != nil {
			return err
		}
		if so[0] == 0 || segs >= peak && peak >= 3 {
			return fmt.Errorf("log start offset %d, %d segment files (had %d)", so[0], segs, peak)
		}
		return nil
	})

	// Freeze retention so the rest of the test is not racing it, then write
	// fresh records that must survive.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("-1")}}, topic)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs retention.ms=-1: %v", err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("IncrementalAlterConfigs retention.ms=-1: %v (%s)", r.Err, r.ErrMessage)
		}
	}
	fresh := genRecords(20, 1, 700)
	for i := range fresh {
		fresh[i].Timestamp = time.Now().UnixMilli()
	}
	fresh = produceAll(t, cl, topic, fresh)

	start := startOffsets(t, adm, topic)[0]
	if start == 0 || start > fresh[0].Offset {
		t.Fatalf("log start offset %d, want within (0, %d]", start, fresh[0].Offset)
	}
	end := endOffsets(t, adm, topic)[0]
	want := int(end - start)

	for name, off := range map[string]kgo.Offset{
		"from-start":   kgo.NewOffset().AtStart(),
		"from-deleted": kgo.NewOffset().At(0), // out of range: reset to start
	} {
		got := consumeKgoFrom(t, b, topic, map[int32]kgo.Offset{0: off}, want, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if got[0].Offset != start {
			t.Errorf("%s: first consumed offset %d, want the log start offset %d", name, got[0].Offset, start)
		}
		for i, r := range got {
			if r.Offset != start+int64(i) {
				t.Errorf("%s: record #%d at offset %d, want %d", name, i, r.Offset, start+int64(i))
				break
			}
		}
		checkRecords(t, fresh, got[len(got)-len(fresh):])
	}
}

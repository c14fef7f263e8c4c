package integration

import (
	"context"
	"encoding/binary"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestartAfterSIGTERM: everything acknowledged before a clean shutdown is
// there after the restart, unchanged, and the log continues at the right
// offsets.
func TestRestartAfterSIGTERM(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	topic := "restart-clean"
	createTopic(t, b.admin(t), topic, 3, nil)

	prodOpts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.SnappyCompression(), kgo.NoCompression()),
	}
	// This idempotent producer lives across the restart: its producer id
	// and sequence numbers must still be accepted afterwards, so the broker
	// has to rebuild producer state from the log.
	prod := b.client(t, prodOpts...)
	sent := produceAll(t, prod, topic, genRecords(3000, 3, 500))
	checkAckOffsets(t, sent, nil)

	b.Stop()
	b.Restart()

	adm := b.admin(t)
	got := consumeKgo(t, b, topic, partitionList(3), len(sent))
	checkRecords(t, sent, got)
	ends := endOffsets(t, adm, topic)
	want := countPerPartition(sent)
	for p := range int32(3) {
		if ends[p] != want[p] {
			t.Errorf("after restart partition %d ends at %d, want %d", p, ends[p], want[p])
		}
	}

	same := produceAll(t, prod, topic, genRecords(600, 3, 501))
	checkAckOffsets(t, same, want) // continues where the log ended
	fresh := produceAll(t, b.client(t, prodOpts...), topic, genRecords(300, 3, 502))
	checkAckOffsets(t, fresh, countPerPartition(append(append([]rec{}, sent...), same...)))

	all := append(append(append([]rec{}, sent...), same...), fresh...)
	got = consumeKgo(t, b, topic, partitionList(3), len(all))
	checkRecords(t, all, got)
	ends = endOffsets(t, adm, topic)
	want = countPerPartition(all)
	for p := range int32(3) {
		if ends[p] != want[p] {
			t.Errorf("partition %d ends at %d, want %d (duplicates?)", p, ends[p], want[p])
		}
	}
}

// TestKillMidProduce crashes the broker with SIGKILL while an acks=all
// producer is writing. After a restart, every acknowledged record is there at
// its acknowledged offset; unacknowledged ones may or may not be. A process
// crash keeps the page cache, so this holds with and without per-message
// fsync. The small-segments case crashes three times in a row with segments
// rolling under load, so recovery also meets fresh segments and indexes.
func TestKillMidProduce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		configs map[string]*string
		cycles  int
	}{
		{"default-flush", nil, nil, 1},
		{"flush-every-message", map[string]string{"GOKAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "1"}, nil, 1},
		// Small segments are the operator's setting: clients may not set
		// segment.bytes below 1 MiB (KIP-1030).
		{"small-segments-3-crashes", map[string]string{"GOKAFKA_LOG_SEGMENT_BYTES": "16384"}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) { killMidProduce(t, tc.env, tc.configs, tc.cycles) })
	}
}

func seqValue(seq uint64) []byte {
	v := make([]byte, 8, 64)
	binary.BigEndian.PutUint64(v, seq)
	return append(v, "-payload-that-pads-the-record-a-little-------------"...)
}

const killParts = 3

func killMidProduce(t *testing.T, env map[string]string, configs map[string]*string, cycles int) {
	b := startBroker(t, brokerOpts{Env: env})
	topic := "kill-mid-produce"
	createTopic(t, b.admin(t), topic, killParts, configs)

	acked := map[uint64]seqAck{}
	var seq uint64
	var ends map[int32]int64
	for cycle := 1; cycle <= cycles; cycle++ {
		seq = produceUntilKilled(t, b, topic, seq, acked)
		b.Restart()
		ends = verifyAfterCrash(t, b, topic, acked)
		if t.Failed() {
			t.Fatalf("crash cycle %d of %d failed", cycle, cycles)
		}
	}

	// The log accepts writes after recovery and continues contiguously.
	after := genRecords(300, killParts, 600)
	after = produceAll(t, b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())), topic, after)
	checkAckOffsets(t, after, ends)
	offs := map[int32]kgo.Offset{}
	for p := range int32(killParts) {
		offs[p] = kgo.NewOffset().At(ends[p])
	}
	checkRecords(t, after, consumeKgoFrom(t, b, topic, offs, len(after)))
}

// produceUntilKilled runs a flat-out acks=all producer from sequence
// number first, kills the broker once 3000 more records were acknowledged
// (the producer still running), and adds every acknowledgement to acked.
// It returns the next unused sequence number.
func produceUntilKilled(t *testing.T, b *broker, topic string, first uint64, acked map[uint64]seqAck) uint64 {
	const ackedBeforeKill = 3000
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(2000),
		kgo.ProducerLinger(time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	)
	if err != nil {
		t.Fatal(err)
	}
	p := startSeqProducerFrom(t, cl, topic, killParts, 0, first)
	p.waitMoreAcks(t, ackedBeforeKill, "before the kill")
	b.Kill() // the producer is still running
	p.abandon(t)
	got := p.ackedCopy()
	maps.Copy(acked, got)
	t.Logf("%d records acknowledged before the crash; failures: %s", len(got), p.failureSummary())
	return p.next()
}

// verifyAfterCrash reads the whole topic and checks it against every
// acknowledgement so far; it returns the end offsets.
func verifyAfterCrash(t *testing.T, b *broker, topic string, acked map[uint64]seqAck) map[int32]int64 {
	adm := b.admin(t)
	var ends map[int32]int64
	eventually(t, time.Minute, func() error {
		var err error
		ends, err = tryListed(topic, func(ctx context.Context) (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) })
		return err
	})
	starts := startOffsets(t, adm, topic)
	total := 0
	for p := range int32(killParts) {
		if starts[p] != 0 {
			t.Errorf("partition %d starts at %d after the crash, want 0", p, starts[p])
		}
		total += int(ends[p])
	}

	got := seqRecords(t, consumeKgo(t, b, topic, partitionList(killParts), total), killParts)
	checkNoDuplicates(t, got)
	checkAcked(t, acked, got)
	return ends
}

package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/partition"
)

// compactionRecords is how many updates TestCompactedTopicReplicasConverge
// writes (1M: about 8 s on two cores).
var compactionRecords = flag.Int("compaction.records", 1_000_000, "updates written by TestCompactedTopicReplicasConverge")

const compactionKeys = 10_000

func compactionKey(i int) string   { return fmt.Sprintf("key-%05d", i%compactionKeys) }
func compactionValue(i int) string { return "value-" + strconv.Itoa(i) }

// replicaRecord is one record as it lies in a node's segment files.
type replicaRecord struct {
	off   int64
	key   string
	value string
}

// readReplica decodes every record of a partition directory's segments.
func readReplica(t testing.TB, dir string) (recs []replicaRecord, logBytes int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatalf("reading %s: %v", seg, err)
		}
		logBytes += int64(len(data))
		for pos := 0; pos+partition.BatchHeaderSize <= len(data); {
			size := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
			if pos+size > len(data) {
				break
			}
			h, err := partition.ParseBatchHeader(data[pos : pos+size])
			if err != nil {
				t.Fatalf("%s at %d: %v", seg, pos, err)
			}
			if !h.IsControl() && h.NumRecords > 0 {
				it, err := partition.NewRecordIter(h, bytes.NewReader(data[pos+partition.BatchHeaderSize:pos+size]), 1<<20, true)
				if err != nil {
					t.Fatal(err)
				}
				for it.Next() {
					r, err := it.Record()
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, replicaRecord{off: it.Offset, key: string(r.Key), value: string(r.Value)})
				}
				if err := it.Err(); err != nil {
					t.Fatalf("%s at %d: %v", seg, pos, err)
				}
				it.Close()
			}
			pos += size
		}
	}
	return recs, logBytes
}

// cleanerCheckpoint reads a node's cleaner-offset-checkpoint entry for
// topic-partition, -1 if there is none.
func cleanerCheckpoint(b *broker, topic string, p int32) int64 {
	data, err := os.ReadFile(filepath.Join(b.DataDir(), "cleaner-offset-checkpoint"))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == topic && f[1] == strconv.Itoa(int(p)) {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	return -1
}

// TestCompactedTopicReplicasConverge writes many updates over 10k keys to
// a compacted RF=3 topic, deletes 1000 of them and lets every node's
// cleaner compact its replica: each replica then holds every live key's
// latest value, each key once below the cleaner checkpoint, nothing of
// the deleted keys once delete.retention.ms has passed, and its disk use
// is within twice the live data (what a consumer from offset 0 reads); a
// consumer from offset 0 reads exactly that.
func TestCompactedTopicReplicasConverge(t *testing.T) {
	n := *compactionRecords
	c := startCluster(t, map[string]string{"GOKAFKA_LOG_CLEANER_BACKOFF_MS": "200"})
	defer c.stopAll(t)
	const topic = "compacted"
	// min.cleanable.dirty.ratio is low so that the last updates are
	// cleaned too, rather than waiting for as many again.
	c.createTopic(t, topic, 1, map[string]*string{
		"cleanup.policy":            strp("compact"),
		"segment.bytes":             strp("1048576"),
		"min.cleanable.dirty.ratio": strp("0.01"),
		"delete.retention.ms":       strp("1000"),
	})
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(50_000))
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		perr error
	)
	produce := func(key string, value []byte) {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				perr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	// n updates over all keys; then the first 1000 keys are deleted
	// (tombstones), and 100k more updates of the others push the
	// tombstones out of the active segment.
	want := map[string]string{}
	for i := 0; i < n; i++ {
		produce(compactionKey(i), []byte(compactionValue(i)))
		want[compactionKey(i)] = compactionValue(i)
	}
	deleted := map[string]bool{}
	for k := 0; k < 1000; k++ {
		produce(compactionKey(k), nil)
		deleted[compactionKey(k)] = true
		delete(want, compactionKey(k))
	}
	const late = 100_000
	for j := 0; j < late; j++ {
		k := compactionKey(1000 + j%(compactionKeys-1000))
		produce(k, []byte("late-"+strconv.Itoa(j)))
		want[k] = "late-" + strconv.Itoa(j)
	}
	wg.Wait()
	if perr != nil {
		t.Fatalf("produce: %v", perr)
	}
	t.Logf("produced %d updates over %d keys, 1000 deletes and %d more updates in %v", n, compactionKeys, late, time.Since(start))
	leo := int64(n + 1000 + late)

	check := func(id int32, recs []replicaRecord, logBytes, checkpoint int64) error {
		latest := map[string]replicaRecord{}
		seen := map[string]int{}
		var liveBytes int64
		for _, r := range recs {
			latest[r.key] = r
			if r.off < checkpoint {
				seen[r.key]++
				if seen[r.key] > 1 {
					return fmt.Errorf("node %d: key %s twice below the cleaner checkpoint %d", id, r.key, checkpoint)
				}
			}
			liveBytes += int64(len(r.key) + len(r.value))
		}
		for k, v := range want {
			if latest[k].value != v {
				return fmt.Errorf("node %d: key %s is %q, want %q", id, k, latest[k].value, v)
			}
		}
		for k := range deleted {
			if r, ok := latest[k]; ok {
				return fmt.Errorf("node %d: deleted key %s still there at %d (tombstones go delete.retention.ms after their first cleaning)", id, k, r.off)
			}
		}
		// Records carry ~20 bytes of framing and batches 61 of header
		// beyond their key and value: live data is what is read back.
		live := liveBytes + int64(len(recs))*20
		if logBytes > 2*live {
			return fmt.Errorf("node %d: %d bytes of segments for %d bytes of live data (%d records)", id, logBytes, live, len(recs))
		}
		return nil
	}
	eventually(t, 120*time.Second, func() error {
		for i, b := range c.nodes {
			id := int32(i + 1)
			cp := cleanerCheckpoint(b, topic, 0)
			if cp <= 0 {
				return fmt.Errorf("node %d has not cleaned yet", id)
			}
			recs, logBytes := readReplica(t, b.PartitionDir(topic, 0))
			if err := check(id, recs, logBytes, cp); err != nil {
				return err
			}
		}
		return nil
	})
	for i, b := range c.nodes {
		recs, logBytes := readReplica(t, b.PartitionDir(topic, 0))
		t.Logf("node %d: %d records in %d bytes of segments, cleaned to %d", i+1, len(recs), logBytes, cleanerCheckpoint(b, topic, 0))
	}

	// A consumer from offset 0 reads one value per key up to the
	// leader's cleaner checkpoint, then the uncleaned tail, and ends with
	// every key's latest value.
	leader := c.leader(t, topic, 0).Leader
	lcp := cleanerCheckpoint(c.node(leader), topic, 0)
	consumer := c.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	last := int64(-1)
	for last < leo-1 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to %d of %d: %v", last, leo, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			if r.Offset < lcp {
				seen[string(r.Key)]++
				if seen[string(r.Key)] > 1 {
					t.Fatalf("key %s read twice below the leader's cleaner checkpoint %d", r.Key, lcp)
				}
			}
			if v, ok := got[string(r.Key)]; ok && r.Offset < lcp {
				t.Fatalf("key %s read as %q, then again at %d", r.Key, v, r.Offset)
			}
			if deleted[string(r.Key)] {
				t.Fatalf("deleted key %s read at %d", r.Key, r.Offset)
			}
			got[string(r.Key)] = string(r.Value)
		})
		if last >= 0 && fs.NumRecords() == 0 && last < lcp {
			continue
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("consumer read key %s as %q, want %q", k, got[k], v)
		}
	}
}

// TestCompactedTopicTransactions cleans a compacted topic written by
// committed and aborted transactions: read_committed and read_uncommitted
// consumers from offset 0 then see every key's last committed value and
// nothing aborted below the cleaned point, and after a kill -9 the
// transactional producer carries on (its producer state, rebuilt from the
// cleaned log, survived).
func TestCompactedTopicTransactions(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_CLEANER_BACKOFF_MS": "100"}})
	const topic = "compacted-txn"
	createTopic(t, b.admin(t), topic, 1, map[string]*string{
		"cleanup.policy":            strp("compact"),
		"segment.bytes":             strp("1048576"),
		"min.cleanable.dirty.ratio": strp("0.01"),
	})
	p := txnProducer(t, b, "compacted-txn")
	ctx := testCtx(t, 60*time.Second)
	// DescribeConfigs shows the cleaner's broker configs and the topic's.
	bcs, err := b.admin(t).DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcs.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, c := range bc.Configs {
		shown[c.Key] = c.MaybeValue()
	}
	if shown["log.cleaner.enable"] != "true" || shown["log.cleaner.threads"] != "1" || shown["log.cleaner.dedupe.buffer.size"] != "134217728" {
		t.Fatalf("broker configs show the cleaner as %q %q %q", shown["log.cleaner.enable"], shown["log.cleaner.threads"], shown["log.cleaner.dedupe.buffer.size"])
	}
	tcs, err := b.admin(t).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tc.Configs {
		shown[c.Key] = c.MaybeValue()
	}
	if shown["cleanup.policy"] != "compact" || shown["delete.retention.ms"] != "86400000" || shown["min.cleanable.dirty.ratio"] != "0.01" {
		t.Fatalf("topic configs show %q %q %q", shown["cleanup.policy"], shown["delete.retention.ms"], shown["min.cleanable.dirty.ratio"])
	}
	const rounds, keys = 120, 10
	rnd := rand.New(rand.NewSource(1))
	committed := map[string]string{}
	aborted := map[string]bool{}
	for r := 0; r < rounds; r++ {
		commit := r%3 != 0 || r == rounds-1
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < keys; k++ {
			key, val := fmt.Sprintf("k%d", k), fmt.Sprintf("r%d-k%d", r, k)
			// 4 KiB values that do not compress: the transactions span
			// several segments.
			pad := make([]byte, 2048)
			rnd.Read(pad)
			if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(val + "|" + hex.EncodeToString(pad))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if commit {
				committed[key] = val
			} else {
				aborted[val] = true
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	var cp int64
	eventually(t, 60*time.Second, func() error {
		if cp = cleanerCheckpoint(b, topic, 0); cp <= 0 {
			var lines []string
			for _, l := range strings.Split(b.logTail(5000), "\n") {
				if strings.Contains(l, "clean") {
					lines = append(lines, l)
				}
			}
			return fmt.Errorf("not cleaned yet: %s", strings.Join(lines, "\n"))
		}
		return nil
	})
	consume := func(iso kgo.IsolationLevel) map[string]string {
		cl := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(iso))
		defer cl.Close()
		got := map[string]string{}
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for cctx.Err() == nil {
			cl.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
				v, _, _ := strings.Cut(string(r.Value), "|")
				if aborted[v] && (iso == kgo.ReadCommitted() || r.Offset < cp) {
					t.Errorf("aborted value %s read at %d (cleaned to %d)", v, r.Offset, cp)
				}
				if !aborted[v] {
					got[string(r.Key)] = v
				}
			})
		}
		return got
	}
	for _, iso := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		got := consume(iso)
		for k, v := range committed {
			if got[k] != v {
				t.Fatalf("key %s read as %q, want %q", k, got[k], v)
			}
		}
	}
	// The producer's state survives in the cleaned log: after a kill -9
	// it goes on with the same transactional id.
	p.Close()
	b.Kill()
	b.start()
	p2 := txnProducer(t, b, "compacted-txn")
	ctx2 := testCtx(t, 60*time.Second)
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx2, &kgo.Record{Topic: topic, Key: []byte("k0"), Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p2.EndTransaction(ctx2, kgo.TransactionEndTry(true)); err != nil {
		t.Fatal(err)
	}
	committed["k0"] = "after"
	got := consume(kgo.ReadCommitted())
	for k, v := range committed {
		if got[k] != v {
			t.Fatalf("after restart key %s read as %q, want %q", k, got[k], v)
		}
	}
}

// BenchmarkProduceLatencyWhileCleaning measures acks=all produce latency
// to one topic, first alone, then while the broker cleans another topic
// of a few hundred MB (which waits, through min.compaction.lag.ms, until
// it is full). It reports p50 and p99 of both phases and how long the
// cleaning took.
//
//	go test ./integration/ -run XXX -bench ProduceLatencyWhileCleaning -benchtime 1x
func BenchmarkProduceLatencyWhileCleaning(b *testing.B) {
	for i := 0; i < b.N; i++ {
		br := startBroker(b, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_CLEANER_BACKOFF_MS": "100"}})
		adm := br.admin(b)
		createTopic(b, adm, "big", 1, map[string]*string{
			"cleanup.policy":        strp("compact"),
			"segment.bytes":         strp("16777216"),
			"min.compaction.lag.ms": strp("86400000"),
		})
		createTopic(b, adm, "small", 1, nil)
		const n, keys = 2_000_000, 200_000
		fill := br.client(b, kgo.DefaultProduceTopic("big"), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(50_000),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		rnd := rand.New(rand.NewSource(1))
		var wg sync.WaitGroup
		for j := 0; j < n; j++ {
			v := make([]byte, 100)
			rnd.Read(v)
			wg.Add(1)
			fill.Produce(context.Background(), &kgo.Record{Key: []byte(fmt.Sprintf("key-%07d", j%keys)), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			})
		}
		wg.Wait()
		fill.Close()
		p := br.client(b, kgo.DefaultProduceTopic("small"), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))
		measure := func(until func() bool) []time.Duration {
			var lat []time.Duration
			for !until() {
				t0 := time.Now()
				if err := p.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				time.Sleep(time.Millisecond)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			return lat
		}
		end := time.Now().Add(3 * time.Second)
		base := measure(func() bool { return time.Now().After(end) })
		ctx := context.Background()
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: strp("0")}}, "big"); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		during := measure(func() bool { return cleanerCheckpoint(br, "big", 0) > 0 || time.Since(start) > 2*time.Minute })
		took := time.Since(start)
		b.ReportMetric(float64(base[len(base)/2].Microseconds()), "alone-p50-us")
		b.ReportMetric(float64(base[len(base)*99/100].Microseconds()), "alone-p99-us")
		b.ReportMetric(float64(during[len(during)/2].Microseconds()), "cleaning-p50-us")
		b.ReportMetric(float64(during[len(during)*99/100].Microseconds()), "cleaning-p99-us")
		b.ReportMetric(took.Seconds(), "cleaning-s")
		var line string
		for _, l := range strings.Split(br.logTail(2000), "\n") {
			if strings.Contains(l, "cleaned log") && strings.Contains(l, "topic=big") {
				line = l
			}
		}
		b.Logf("%d produces alone, %d during cleaning; %s", len(base), len(during), line)
		p.Close()
		br.Stop()
	}
}

// TestCompactionSurvivesKill9 kills the broker with SIGKILL while it
// swaps cleaned segments in, restarts it and requires every key's latest
// value, then lets the cleaning finish and requires it again.
func TestCompactionSurvivesKill9(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_CLEANER_BACKOFF_MS": "50"}})
	const topic = "compacted-kill"
	adm := b.admin(t)
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy":        strp("compact"),
		"segment.bytes":         strp("1048576"),
		"min.compaction.lag.ms": strp("86400000"), // nothing cleanable while it fills
	})
	const n, keys = 400_000, 5_000
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(50_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	want := map[string]string{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		k, v := fmt.Sprintf("key-%05d", i%keys), fmt.Sprintf("value-%d-%090d", i, i)
		want[k] = v
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(k), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	cl.Close()
	ctx := testCtx(t, 60*time.Second)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: strp("0")}}, topic); err != nil {
		t.Fatal(err)
	}
	// Kill as soon as a swap file shows up (or after 3 s).
	dir := b.PartitionDir(topic, 0)
	deadline := time.Now().Add(3 * time.Second)
	seen := ""
	for seen == "" && time.Now().Before(deadline) {
		names, _ := filepath.Glob(filepath.Join(dir, "*.swap"))
		if len(names) > 0 {
			seen = filepath.Base(names[0])
		}
		time.Sleep(200 * time.Microsecond)
	}
	b.Kill()
	t.Logf("killed with %q present", seen)
	b.start()
	check := func(what string) {
		got := map[string]string{}
		c := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		defer c.Close()
		last := int64(-1)
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for last < n-1 {
			fs := c.PollFetches(cctx)
			if cctx.Err() != nil {
				t.Fatalf("%s: read up to %d of %d", what, last, n)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset <= last {
					t.Fatalf("%s: offset %d after %d", what, r.Offset, last)
				}
				last = r.Offset
				got[string(r.Key)] = string(r.Value)
			})
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: key %s is %.20q, want %.20q", what, k, got[k], v)
			}
		}
	}
	check("after kill -9")
	eventually(t, 60*time.Second, func() error {
		if cleanerCheckpoint(b, topic, 0) <= 0 {
			return fmt.Errorf("not cleaned after the restart")
		}
		return nil
	})
	check("after cleaning")
	recs, size := readReplica(t, dir)
	t.Logf("%d records in %d bytes after cleaning", len(recs), size)
}

package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is a client-neutral record, so records produced by one client and read
// by another compare with one function.
type rec struct {
	Partition int32
	Offset    int64 // -1 when the producer did not report it
	Key       []byte
	Value     []byte
	Headers   []hdr
	Timestamp int64 // milliseconds since the epoch
}

type hdr struct {
	Key   string
	Value []byte
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d key=%q ts=%d value(%dB)=%q headers=%d", r.Partition, r.Offset,
		clip(r.Key), r.Timestamp, len(r.Value), clip(r.Value), len(r.Headers))
}

func clip(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

func fromKgo(r *kgo.Record) rec {
	out := rec{
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp.UnixMilli(),
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, hdr{h.Key, h.Value})
	}
	return out
}

func toKgo(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{
		Topic:     topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

// genRecords makes n records spread round-robin over the partitions, each
// with a unique key, two headers, an explicit timestamp and a value of
// varying size that is half compressible text and half random bytes, so every
// codec has real work to do. The seed makes a failure reproducible.
func genRecords(n int, partitions int32, seed uint64) []rec {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Timestamps lie in the recent past, have millisecond precision (all the
	// wire keeps) and are not monotonic, so per-record deltas are exercised.
	base := time.Now().Add(-time.Hour).UnixMilli()
	out := make([]rec, n)
	for i := range out {
		size := 20 + rng.IntN(300)
		v := make([]byte, 0, size)
		text := fmt.Sprintf("record %d of %d, seed %d; ", i, n, seed)
		for len(v) < size/2 {
			v = append(v, text...)
		}
		for len(v) < size {
			v = append(v, byte(rng.Uint32()))
		}
		out[i] = rec{
			Partition: int32(i) % partitions,
			Offset:    -1,
			Key:       []byte(fmt.Sprintf("key-%07d", i)),
			Value:     v[:size],
			Headers: []hdr{
				{"index", []byte(fmt.Sprint(i))},
				{"bin", []byte{byte(i), 0, byte(i >> 8), 0xff}},
			},
			Timestamp: base + int64(i) + int64(rng.IntN(50)),
		}
	}
	return out
}

// byPartition groups records by partition, keeping their order.
func byPartition(rs []rec) map[int32][]rec {
	m := map[int32][]rec{}
	for _, r := range rs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// checkRecords requires got to hold exactly want: per partition the same
// records in the same order, equal byte for byte in key, value, headers and
// timestamp, with strictly increasing offsets that equal the producer's
// acknowledged offsets where those are known.
func checkRecords(t testing.TB, want, got []rec) {
	t.Helper()
	const maxReports = 10
	reports := 0
	report := func(format string, args ...any) {
		if reports < maxReports {
			t.Errorf(format, args...)
		} else if reports == maxReports {
			t.Errorf("... more mismatches not shown")
		}
		reports++
	}
	w, g := byPartition(want), byPartition(got)
	parts := map[int32]bool{}
	for p := range w {
		parts[p] = true
	}
	for p := range g {
		parts[p] = true
	}
	var sorted []int32
	for p := range parts {
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, p := range sorted {
		wp, gp := w[p], g[p]
		if len(wp) != len(gp) {
			report("partition %d: want %d records, got %d", p, len(wp), len(gp))
		}
		for i := 0; i < len(wp) && i < len(gp); i++ {
			if d := diffRec(wp[i], gp[i]); d != "" {
				report("partition %d, record #%d: %s\n  want %v\n  got  %v", p, i, d, wp[i], gp[i])
			}
			if i > 0 && gp[i].Offset <= gp[i-1].Offset {
				report("partition %d: offsets not increasing: #%d at %d after %d", p, i, gp[i].Offset, gp[i-1].Offset)
			}
		}
	}
}

func diffRec(want, got rec) string {
	var d []string
	if want.Offset >= 0 && want.Offset != got.Offset {
		d = append(d, fmt.Sprintf("at offset %d, acknowledged at %d", got.Offset, want.Offset))
	}
	if !bytes.Equal(want.Key, got.Key) {
		d = append(d, "key differs")
	}
	if !bytes.Equal(want.Value, got.Value) {
		d = append(d, fmt.Sprintf("value differs (got %d bytes, want %d)", len(got.Value), len(want.Value)))
	}
	if want.Timestamp != got.Timestamp {
		d = append(d, fmt.Sprintf("timestamp %d, want %d", got.Timestamp, want.Timestamp))
	}
	if len(want.Headers) != len(got.Headers) {
		d = append(d, fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers)))
	} else {
		for i := range want.Headers {
			if want.Headers[i].Key != got.Headers[i].Key || !bytes.Equal(want.Headers[i].Value, got.Headers[i].Value) {
				d = append(d, fmt.Sprintf("header %d differs", i))
			}
		}
	}
	return strings.Join(d, "; ")
}

// checkAckOffsets requires that, per partition, acknowledged offsets are
// start, start+1, ... in produce order: the broker kept the producer's order
// and assigned one offset per record.
func checkAckOffsets(t testing.TB, sent []rec, start map[int32]int64) {
	t.Helper()
	next := map[int32]int64{}
	for p, o := range start {
		next[p] = o
	}
	bad := 0
	for i, r := range sent {
		if r.Offset != next[r.Partition] {
			if bad < 5 {
				t.Errorf("record #%d (partition %d) acknowledged at offset %d, want %d", i, r.Partition, r.Offset, next[r.Partition])
			}
			bad++
			next[r.Partition] = r.Offset
		}
		next[r.Partition]++
	}
	if bad > 0 {
		t.Errorf("%d records acknowledged out of sequence", bad)
	}
}

// produceAll produces rs with cl, waits for every acknowledgement and returns
// the records with their acknowledged offsets filled in.
func produceAll(t testing.TB, cl *kgo.Client, topic string, rs []rec) []rec {
	t.Helper()
	ctx := testCtx(t, 2*time.Minute)
	out := make([]rec, len(rs))
	copy(out, rs)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range rs {
		i := i
		wg.Add(1)
		cl.Produce(ctx, toKgo(topic, rs[i]), func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("record #%d: %w", i, err))
				mu.Unlock()
				return
			}
			out[i].Offset = r.Offset
			out[i].Partition = r.Partition
		})
	}
	// A buffered record waits for its broker without limit (kgo measures
	// RecordDeliveryTimeout from the record's own timestamp, which tests set
	// in the past), so bound the wait here: a wedged broker fails the test
	// instead of hanging it.
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(3 * time.Minute):
		t.Fatalf("produce acknowledgements still outstanding after 3 minutes")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d of %d produces failed; first: %v", len(errs), len(rs), errs[0])
	}
	return out
}

// consumeKgo reads the given partitions of topic from their starts with a
// fresh kgo consumer until want records arrived, then returns them.
func consumeKgo(t testing.TB, b *broker, topic string, partitions []int32, want int, opts ...kgo.Opt) []rec {
	t.Helper()
	offs := map[int32]kgo.Offset{}
	for _, p := range partitions {
		offs[p] = kgo.NewOffset().AtStart()
	}
	return consumeKgoFrom(t, b, topic, offs, want, opts...)
}

func consumeKgoFrom(t testing.TB, b *broker, topic string, offs map[int32]kgo.Offset, want int, opts ...kgo.Opt) []rec {
	t.Helper()
	cl := b.client(t, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})}, opts...)...)
	defer cl.Close()
	return pollN(t, cl, want, 90*time.Second)
}

// pollN polls cl until n records arrived or timeout passed.
func pollN(t testing.TB, cl *kgo.Client, n int, timeout time.Duration) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []rec
	var lastErrs []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			lastErrs = append(lastErrs, fmt.Sprintf("%s[%d]: %v", topic, p, err))
			if len(lastErrs) > 10 {
				lastErrs = lastErrs[1:]
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
	}
	if len(got) < n {
		t.Fatalf("consumed %d of %d records within %v; recent fetch errors: %v", len(got), n, timeout, lastErrs)
	}
	return got
}

// endOffsets lists the end offsets (high watermarks) of topic's partitions.
func endOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listed(t, "ListEndOffsets", topic, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, topic)
	})
}

func startOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listed(t, "ListStartOffsets", topic, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListStartOffsets(ctx, topic)
	})
}

func listed(t testing.TB, what, topic string, fn func(context.Context) (kadm.ListedOffsets, error)) map[int32]int64 {
	t.Helper()
	out, err := tryListed(topic, fn)
	if err != nil {
		t.Fatalf("%s(%s): %v", what, topic, err)
	}
	return out
}

func tryListed(topic string, fn func(context.Context) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range lo[topic] {
		out[p] = o.Offset
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions listed for %s", topic)
	}
	return out, nil
}

func countPerPartition(rs []rec) map[int32]int64 {
	m := map[int32]int64{}
	for _, r := range rs {
		m[r.Partition]++
	}
	return m
}

func partitionList(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func endOffsetsFn(adm *kadm.Client, topic string) func(context.Context) (kadm.ListedOffsets, error) {
	return func(ctx context.Context) (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) }
}

// equalCounts compares listed end offsets with expected per-partition counts.
func equalCounts(got, want map[int32]int64) error {
	for p, n := range want {
		if got[p] != n {
			return fmt.Errorf("partition %d: end offset %d, want %d (all: %v)", p, got[p], n, got)
		}
	}
	return nil
}

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/integration/confluentgo"
)

// Client compatibility: clients that are not Go — kcat and confluent-kafka
// for Python (both on Debian's librdkafka 2.0.2), kafka-python 2.0.2 and
// kafkajs 2.2.4, which pin old API versions — and confluent-kafka-go with
// the librdkafka it bundles, each against a real broker:
//
//   - keys-headers: franz-go writes records, the client writes records; the
//     client reads all of them back and so does franz-go, and keys, values and
//     headers must match byte for byte (null and empty kept apart).
//   - group-resume: the client consumes in a group and commits; after more
//     records arrive it consumes again in the same group and gets exactly the
//     new ones.
//   - gzip, snappy, lz4, zstd: as keys-headers with both sides compressing,
//     and the stored batches must carry that codec.
//   - idempotent: an idempotent producer's records arrive once, in batches
//     that carry its producer id.
//   - transactions: a committed, an aborted and another committed
//     transaction, read back with isolation.level=read_committed.
//
// The results fill README's compatibility table. GOKAFKA_UPDATE_README=1
// rewrites the table from a full run; otherwise the test fails when README
// claims a cell whose test did not pass in this run.
//
// A client that is not installed skips its subtests, except under CI (CI
// set), where .ci/run installs them all and a missing one is a failure.

// ---------------------------------------------------------------------------
// Records.

type ccHeader struct {
	Key   string
	Value []byte // nil: null
}

type ccRecord struct {
	Partition int32
	Offset    int64
	Key       []byte // nil: null
	Value     []byte // nil: null
	Headers   []ccHeader
}

// wire form shared with the scripts in testdata/clients: base64 bytes,
// headers as [key, value] pairs.
type ccWireRecord struct {
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       []byte            `json:"key"`
	Value     []byte            `json:"value"`
	Headers   []json.RawMessage `json:"headers"`
}

func ccToWire(recs []ccRecord) []ccWireRecord {
	out := make([]ccWireRecord, 0, len(recs))
	for _, r := range recs {
		w := ccWireRecord{Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: []json.RawMessage{}}
		for _, h := range r.Headers {
			pair, _ := json.Marshal([]any{h.Key, h.Value})
			w.Headers = append(w.Headers, pair)
		}
		out = append(out, w)
	}
	return out
}

func ccFromWire(ws []ccWireRecord) ([]ccRecord, error) {
	out := make([]ccRecord, 0, len(ws))
	for _, w := range ws {
		r := ccRecord{Partition: w.Partition, Offset: w.Offset, Key: w.Key, Value: w.Value}
		for _, raw := range w.Headers {
			var pair []json.RawMessage
			if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
				return nil, fmt.Errorf("bad header %s", raw)
			}
			var h ccHeader
			if err := json.Unmarshal(pair[0], &h.Key); err != nil {
				return nil, fmt.Errorf("bad header key %s", pair[0])
			}
			if err := json.Unmarshal(pair[1], &h.Value); err != nil {
				return nil, fmt.Errorf("bad header value %s", pair[1])
			}
			r.Headers = append(r.Headers, h)
		}
		out = append(out, r)
	}
	return out, nil
}

// ccBinaryRecords are n records that use what the record format allows:
// null and empty keys and values, bytes that are not UTF-8, several headers,
// a repeated header key (adjacent, which kafkajs needs) and empty header
// values.
func ccBinaryRecords(prefix string, n int) []ccRecord {
	out := make([]ccRecord, 0, n)
	for i := range n {
		r := ccRecord{
			Key:   append([]byte(prefix+"-k"+strconv.Itoa(i)+ccFiller), 0x00, 0xff, 0x80, 0x0a),
			Value: append([]byte(prefix+"-v"+strconv.Itoa(i)+"-\u00fc\u20ac"+ccFiller), 0x00, 0xfe, 0x1e, 0x1f, 0x0a),
		}
		switch i % 6 {
		case 1:
			r.Key = nil
		case 3:
			r.Value = []byte{}
		case 4:
			r.Key = []byte{}
		case 5:
			r.Value = nil
		}
		switch i % 4 {
		case 1:
			r.Headers = []ccHeader{{"h", []byte("x")}}
		case 2:
			r.Headers = []ccHeader{{"trace", []byte{0x00, 0x01, 0xff, 0x80}}, {"dup", []byte("one")}, {"dup", []byte("two")}}
		case 3:
			r.Headers = []ccHeader{{"empty", []byte{}}, {"\u00e4-key", []byte("\u00e4")}}
		}
		out = append(out, r)
	}
	return out
}

// ccTextRecords are records kcat can carry through its line format and JSON
// output: UTF-8 keys and values without the delimiters, and the same headers
// on every record of one produce call.
func ccTextRecords(prefix string, n int) []ccRecord {
	out := make([]ccRecord, 0, n)
	for i := range n {
		out = append(out, ccRecord{
			Key:     []byte(prefix + "-k\u00e4-" + strconv.Itoa(i)),
			Value:   []byte(prefix + "-v \u00fc\u20ac\t\"\\/" + strconv.Itoa(i) + "\x00x\ny" + ccFiller),
			Headers: []ccHeader{{"h1", []byte("\u00e4 b")}, {"h1", []byte{}}, {"x", []byte("y=z")}},
		})
	}
	return out
}

// ccFiller makes keys and values long and repetitive enough that every codec
// shrinks even a batch of one record (every record has a non-empty key or
// value): clients send a batch uncompressed when compressing does not help.
var ccFiller = " " + strings.Repeat("compressible filler ", 20)

func ccSame(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func ccShow(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// ccDiffRecord describes how got differs from want in key, value or headers.
func ccDiffRecord(want, got ccRecord) string {
	var d []string
	if !ccSame(want.Key, got.Key) {
		d = append(d, fmt.Sprintf("key %s, want %s", ccShow(got.Key), ccShow(want.Key)))
	}
	if !ccSame(want.Value, got.Value) {
		d = append(d, fmt.Sprintf("value %s, want %s", ccShow(got.Value), ccShow(want.Value)))
	}
	hdrs := func(hs []ccHeader) string {
		var s []string
		for _, h := range hs {
			s = append(s, fmt.Sprintf("%q=%s", h.Key, ccShow(h.Value)))
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	same := len(want.Headers) == len(got.Headers)
	for i := 0; same && i < len(want.Headers); i++ {
		same = want.Headers[i].Key == got.Headers[i].Key && ccSame(want.Headers[i].Value, got.Headers[i].Value)
	}
	if !same {
		d = append(d, fmt.Sprintf("headers %s, want %s", hdrs(got.Headers), hdrs(want.Headers)))
	}
	return strings.Join(d, "; ")
}

// ccCheckRecords requires got to be want, in order, byte for byte.
func ccCheckRecords(t *testing.T, who string, want, got []ccRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d records, want %d", who, len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		if d := ccDiffRecord(want[i], got[i]); d != "" {
			if bad++; bad <= 5 {
				t.Errorf("%s: record %d (partition %d offset %d): %s", who, i, got[i].Partition, got[i].Offset, d)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d records differ in all", who, bad)
	}
}

// ---------------------------------------------------------------------------
// franz-go as the reference side.

func ccKgoProduce(t *testing.T, b *broker, topic string, recs []ccRecord, codec kgo.CompressionCodec) {
	t.Helper()
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0))
	defer cl.Close()
	krs := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		kr := &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs = append(krs, kr)
	}
	if err := cl.ProduceSync(testCtx(t, 60*time.Second), krs...).FirstErr(); err != nil {
		t.Fatalf("franz-go producing %d records to %s: %v", len(recs), topic, err)
	}
}

// ccKgoConsume reads partition 0 of topic from the start until n records
// arrived.
func ccKgoConsume(t *testing.T, b *broker, topic string, n int, opts ...kgo.Opt) []ccRecord {
	t.Helper()
	cl := b.client(t, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	})}, opts...)...)
	defer cl.Close()
	ctx := testCtx(t, 30*time.Second)
	var out []ccRecord
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go read %d of %d records from %s: %v", len(out), n, topic, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("franz-go fetching %s: %v", topic, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			cr := ccRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				cr.Headers = append(cr.Headers, ccHeader{h.Key, h.Value})
			}
			out = append(out, cr)
		})
	}
	return out
}

// ccBatch is the header of one stored record batch.
type ccBatch struct {
	baseOffset int64
	attributes int16
	producerID int64
	records    int32
}

// ccBatches reads partition 0 of topic with raw Fetch requests and returns
// the headers of its record batches, as stored.
func ccBatches(t *testing.T, b *broker, topic string) []ccBatch {
	t.Helper()
	rc := dialRaw(t, b)
	var out []ccBatch
	offset := int64(0)
	for range 100 {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 64<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 64<<20
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rc.roundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("raw fetch of %s: unexpected response shape", topic)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("raw fetch of %s at %d: %v", topic, offset, err)
		}
		data := p.RecordBatches
		for len(data) >= 61 {
			length := int(int32(binary.BigEndian.Uint32(data[8:12])))
			if 12+length > len(data) {
				break // a partial batch at the end of the response
			}
			bt := ccBatch{
				baseOffset: int64(binary.BigEndian.Uint64(data[0:8])),
				attributes: int16(binary.BigEndian.Uint16(data[21:23])),
				producerID: int64(binary.BigEndian.Uint64(data[43:51])),
				records:    int32(binary.BigEndian.Uint32(data[57:61])),
			}
			out = append(out, bt)
			offset = bt.baseOffset + int64(binary.BigEndian.Uint32(data[23:27])) + 1
			data = data[12+length:]
		}
		if offset >= p.HighWatermark {
			return out
		}
	}
	t.Fatalf("raw fetch of %s: did not reach the high watermark", topic)
	return nil
}

var ccCodecs = map[string]struct {
	id  int16
	kgo kgo.CompressionCodec
}{
	"gzip":   {1, kgo.GzipCompression()},
	"snappy": {2, kgo.SnappyCompression()},
	"lz4":    {3, kgo.Lz4Compression()},
	"zstd":   {4, kgo.ZstdCompression()},
}

// ---------------------------------------------------------------------------
// External processes.

// ccRun runs a command with stdin, bounded by timeout: at the deadline, or
// when the test ends first, its whole process group is killed.
func ccRun(t *testing.T, timeout time.Duration, dir string, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOKAFKA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	pgid := cmd.Process.Pid
	var once sync.Once
	kill := func() { once.Do(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) }
	t.Cleanup(kill)
	err = cmd.Wait()
	kill() // anything the command left behind in its group
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: killed after %v: %w", name, timeout, ctx.Err())
	}
	return out.Bytes(), errb.Bytes(), err
}

func ccTail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// ccMissing reports a client that is not installed: a skip on a developer's
// machine, a failure in CI, which installs every client.
func ccMissing(t *testing.T, m *ccMatrix, family, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, and .ci/run installs it)", msg)
	}
	m.missing(family)
	t.Skipf("%s; skipping (a failure when CI is set)", msg)
}

const ccPython = "/usr/bin/python3"

func ccClientsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ---------------------------------------------------------------------------
// Client families.

type ccProduceOpts struct {
	compression string // "" or none, gzip, snappy, lz4, zstd
	idempotent  bool
}

type ccConsumeOpts struct {
	group         string // consume in this group; else assign partition 0
	partitions    int32  // partitions of the topic (for assign)
	count         int
	linger        time.Duration
	commit        bool
	readCommitted bool
}

type ccTxn struct {
	records []ccRecord
	commit  bool
}

type ccFamily struct {
	name string
	// setup checks the client is there (ccMissing otherwise) and returns
	// its version and the compression codecs it has here.
	setup func(t *testing.T, m *ccMatrix) (version string, codecs []string)
	// text: the client only carries ccTextRecords.
	text       bool
	idempotent bool
	produce    func(t *testing.T, b *broker, topic string, recs []ccRecord, o ccProduceOpts) error
	consume    func(t *testing.T, b *broker, topic string, o ccConsumeOpts) ([]ccRecord, error)
	// txn is nil for clients without transactions.
	txn func(t *testing.T, b *broker, topic, transactionalID string, txns []ccTxn) error
}

func (f *ccFamily) records(prefix string, n int) []ccRecord {
	if f.text {
		return ccTextRecords(prefix, n)
	}
	return ccBinaryRecords(prefix, n)
}

// A script family drives one of the scripts in testdata/clients: a JSON
// request on stdin, "RESULT <json>" on stdout.

type ccScriptResult struct {
	Error     string         `json:"error"`
	ErrorName string         `json:"error_name"`
	Records   []ccWireRecord `json:"records"`
	Version   string         `json:"version"`
	Codecs    []string       `json:"codecs"`
}

func ccScript(t *testing.T, dir string, argv []string, req map[string]any) (ccScriptResult, []ccRecord, error) {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, runErr := ccRun(t, 90*time.Second, dir, in, argv[0], argv[1:]...)
	var res ccScriptResult
	found := false
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			res, found = ccScriptResult{}, true
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return res, nil, fmt.Errorf("%s %s: bad result line: %v", argv[len(argv)-1], req["op"], err)
			}
		}
	}
	if !found || runErr != nil {
		return res, nil, fmt.Errorf("%s %s: no result (exit: %v)\nstdout: %s\nstderr: %s",
			argv[len(argv)-1], req["op"], runErr, ccTail(stdout, 2000), ccTail(stderr, 3000))
	}
	recs, err := ccFromWire(res.Records)
	if err != nil {
		return res, nil, err
	}
	if res.Error != "" {
		return res, recs, fmt.Errorf("%s %s: %s (%s)\nstderr: %s", argv[len(argv)-1], req["op"], res.Error, res.ErrorName, ccTail(stderr, 3000))
	}
	return res, recs, nil
}

func ccScriptFamily(name string, argv func(t *testing.T) (dir string, argv []string), check func(t *testing.T, m *ccMatrix), idempotent, txn, text bool) *ccFamily {
	f := &ccFamily{name: name, idempotent: idempotent, text: text}
	var dir string
	var args []string
	f.setup = func(t *testing.T, m *ccMatrix) (string, []string) {
		check(t, m)
		dir, args = argv(t)
		res, _, err := ccScript(t, dir, args, map[string]any{"op": "version"})
		if err != nil {
			t.Fatalf("asking %s for its version: %v", name, err)
		}
		return res.Version, res.Codecs
	}
	f.produce = func(t *testing.T, b *broker, topic string, recs []ccRecord, o ccProduceOpts) error {
		_, _, err := ccScript(t, dir, args, map[string]any{
			"op": "produce", "bootstrap": b.Addr(), "topic": topic, "records": ccToWire(recs),
			"compression": o.compression, "idempotent": o.idempotent, "partition": 0,
		})
		return err
	}
	f.consume = func(t *testing.T, b *broker, topic string, o ccConsumeOpts) ([]ccRecord, error) {
		isolation := "read_uncommitted"
		if o.readCommitted {
			isolation = "read_committed"
		}
		parts := []int32{}
		for p := range o.partitions {
			parts = append(parts, p)
		}
		_, recs, err := ccScript(t, dir, args, map[string]any{
			"op": "consume", "bootstrap": b.Addr(), "topic": topic, "group": o.group, "partitions": parts,
			"count": o.count, "linger_ms": o.linger.Milliseconds(), "timeout_ms": 30000,
			"commit": o.commit, "isolation": isolation,
		})
		return recs, err
	}
	if txn {
		f.txn = func(t *testing.T, b *broker, topic, id string, txns []ccTxn) error {
			var wire []map[string]any
			for _, tx := range txns {
				wire = append(wire, map[string]any{"records": ccToWire(tx.records), "commit": tx.commit})
			}
			_, _, err := ccScript(t, dir, args, map[string]any{
				"op": "txn", "bootstrap": b.Addr(), "topic": topic, "transactional_id": id,
				"txns": wire, "partition": 0, "timeout_ms": 30000,
			})
			return err
		}
	}
	return f
}

func ccPythonModule(module string) func(t *testing.T, m *ccMatrix) {
	return func(t *testing.T, m *ccMatrix) {
		t.Helper()
		if _, err := os.Stat(ccPython); err != nil {
			ccMissing(t, m, t.Name(), "%s not found", ccPython)
		}
		if _, stderr, err := ccRun(t, 30*time.Second, "", nil, ccPython, "-c", "import "+module); err != nil {
			ccMissing(t, m, t.Name(), "python module %s not importable: %v %s", module, err, ccTail(stderr, 300))
		}
	}
}

func ccPythonArgv(script string) func(t *testing.T) (string, []string) {
	return func(t *testing.T) (string, []string) {
		dir := ccClientsDir(t)
		return dir, []string{ccPython, filepath.Join(dir, script)}
	}
}

func ccKafkajsDir(t *testing.T) string {
	return filepath.Join(ccClientsDir(t), "kafkajs")
}

func ccKafkajsCheck(t *testing.T, m *ccMatrix) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		ccMissing(t, m, t.Name(), "node not found")
	}
	if _, err := os.Stat(filepath.Join(ccKafkajsDir(t), "node_modules", "kafkajs", "package.json")); err != nil {
		ccMissing(t, m, t.Name(), "kafkajs not installed (run npm ci in %s)", ccKafkajsDir(t))
	}
}

// kcat: the command line over Debian's librdkafka.

var ccKcatVersion = regexp.MustCompile(`Version (\S+) .*librdkafka (\S+)`)

func ccKcatFamily() *ccFamily {
	f := &ccFamily{name: "kcat", text: true, idempotent: true}
	f.setup = func(t *testing.T, m *ccMatrix) (string, []string) {
		if _, err := exec.LookPath("kcat"); err != nil {
			ccMissing(t, m, t.Name(), "kcat not found")
		}
		out, stderr, err := ccRun(t, 30*time.Second, "", nil, "kcat", "-V")
		sm := ccKcatVersion.FindSubmatch(append(out, stderr...))
		if err != nil || sm == nil {
			t.Fatalf("kcat -V: %v %s", err, out)
		}
		var codecs []string
		for _, c := range []string{"gzip", "snappy", "lz4", "zstd"} {
			if regexp.MustCompile(`builtin\.features=\S*\b` + c + `\b`).Match(out) {
				codecs = append(codecs, c)
			}
		}
		return fmt.Sprintf("%s (librdkafka %s)", sm[1], sm[2]), codecs
	}
	f.produce = func(t *testing.T, b *broker, topic string, recs []ccRecord, o ccProduceOpts) error {
		// Headers are per invocation: one kcat per run of equal headers.
		for len(recs) > 0 {
			n := 1
			for n < len(recs) && ccDiffRecord(ccRecord{Headers: recs[0].Headers}, ccRecord{Headers: recs[n].Headers}) == "" {
				n++
			}
			args := []string{"-P", "-b", b.Addr(), "-t", topic, "-p", "0", "-K", `\x1f`, "-D", `\x1e`,
				"-X", "acks=all", "-X", "linger.ms=5"}
			if o.compression != "" {
				args = append(args, "-z", o.compression)
			}
			if o.idempotent {
				args = append(args, "-X", "enable.idempotence=true")
			}
			for _, h := range recs[0].Headers {
				args = append(args, "-H", h.Key+"="+string(h.Value))
			}
			var in bytes.Buffer
			for _, r := range recs[:n] {
				if r.Key == nil || r.Value == nil || bytes.ContainsAny(r.Key, "\x1e\x1f") || bytes.ContainsAny(r.Value, "\x1e\x1f") {
					t.Fatalf("kcat cannot carry record %s/%s", ccShow(r.Key), ccShow(r.Value))
				}
				in.Write(r.Key)
				in.WriteByte(0x1f)
				in.Write(r.Value)
				in.WriteByte(0x1e)
			}
			_, stderr, err := ccRun(t, 60*time.Second, "", in.Bytes(), "kcat", args...)
			if err != nil || bytes.Contains(stderr, []byte("% ERROR")) || bytes.Contains(stderr, []byte("Delivery failed")) {
				return fmt.Errorf("kcat %s: %v\n%s", strings.Join(args, " "), err, ccTail(stderr, 3000))
			}
			recs = recs[n:]
		}
		return nil
	}
	f.consume = func(t *testing.T, b *broker, topic string, o ccConsumeOpts) ([]ccRecord, error) {
		var args []string
		if o.group != "" {
			// The balanced consumer commits what it consumed when it closes
			// after -c records (enable.auto.commit).
			args = []string{"-b", b.Addr(), "-G", o.group, "-X", "auto.offset.reset=earliest",
				"-X", "enable.auto.commit=" + strconv.FormatBool(o.commit)}
		} else {
			args = []string{"-C", "-b", b.Addr(), "-t", topic, "-p", "0", "-o", "beginning"}
		}
		if o.readCommitted {
			args = append(args, "-X", "isolation.level=read_committed")
		}
		args = append(args, "-c", strconv.Itoa(o.count), "-J", "-q")
		if o.group != "" {
			args = append(args, topic)
		}
		stdout, stderr, err := ccRun(t, 60*time.Second, "", nil, "kcat", args...)
		var out []ccRecord
		sc := bufio.NewScanner(bytes.NewReader(stdout))
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for sc.Scan() {
			var m struct {
				Partition int32    `json:"partition"`
				Offset    int64    `json:"offset"`
				Key       *string  `json:"key"`
				Payload   *string  `json:"payload"`
				Headers   []string `json:"headers"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				return out, fmt.Errorf("kcat output %q: %v", sc.Text(), err)
			}
			r := ccRecord{Partition: m.Partition, Offset: m.Offset}
			if m.Key != nil {
				r.Key = []byte(*m.Key)
			}
			if m.Payload != nil {
				r.Value = []byte(*m.Payload)
			}
			for i := 0; i+1 < len(m.Headers); i += 2 {
				r.Headers = append(r.Headers, ccHeader{m.Headers[i], []byte(m.Headers[i+1])})
			}
			out = append(out, r)
		}
		if err != nil {
			return out, fmt.Errorf("kcat %s: %v\n%s", strings.Join(args, " "), err, ccTail(stderr, 3000))
		}
		return out, nil
	}
	return f
}

// confluent-kafka-go: in this process, through integration/confluentgo.

func ccConfluentGoFamily() *ccFamily {
	f := &ccFamily{name: "confluent-kafka-go", idempotent: true}
	conv := func(recs []ccRecord) []confluentgo.Record {
		out := make([]confluentgo.Record, 0, len(recs))
		for _, r := range recs {
			cr := confluentgo.Record{Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				cr.Headers = append(cr.Headers, confluentgo.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, cr)
		}
		return out
	}
	f.setup = func(t *testing.T, m *ccMatrix) (string, []string) {
		// The module version is the one go.mod requires; test binaries
		// carry no module information to ask.
		mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		sm := regexp.MustCompile(`github\.com/confluentinc/confluent-kafka-go/v2 v(\S+)`).FindSubmatch(mod)
		if sm == nil {
			t.Fatal("go.mod does not require github.com/confluentinc/confluent-kafka-go/v2")
		}
		return fmt.Sprintf("%s (librdkafka %s)", sm[1], confluentgo.LibrdkafkaVersion()), []string{"gzip", "snappy", "lz4", "zstd"}
	}
	f.produce = func(t *testing.T, b *broker, topic string, recs []ccRecord, o ccProduceOpts) error {
		return confluentgo.Produce(testCtx(t, 60*time.Second), b.Addr(), topic, conv(recs),
			confluentgo.ProduceOpts{Compression: o.compression, Idempotent: o.idempotent, Partition: 0})
	}
	f.consume = func(t *testing.T, b *broker, topic string, o ccConsumeOpts) ([]ccRecord, error) {
		co := confluentgo.ConsumeOpts{Group: o.group, Count: o.count, Linger: o.linger, Commit: o.commit, ReadCommitted: o.readCommitted}
		for p := range o.partitions {
			co.Partitions = append(co.Partitions, p)
		}
		got, err := confluentgo.Consume(testCtx(t, 30*time.Second), b.Addr(), topic, co)
		out := make([]ccRecord, 0, len(got))
		for _, r := range got {
			cr := ccRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				cr.Headers = append(cr.Headers, ccHeader{h.Key, h.Value})
			}
			out = append(out, cr)
		}
		return out, err
	}
	f.txn = func(t *testing.T, b *broker, topic, id string, txns []ccTxn) error {
		var ts []confluentgo.Txn
		for _, tx := range txns {
			ts = append(ts, confluentgo.Txn{Records: conv(tx.records), Commit: tx.commit})
		}
		err := confluentgo.Transactions(testCtx(t, 60*time.Second), b.Addr(), topic, id, ts)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, confluentgo.ErrorCode(err))
		}
		return nil
	}
	return f
}

func ccFamilies() []*ccFamily {
	return []*ccFamily{
		ccKcatFamily(),
		ccScriptFamily("confluent-kafka-python", ccPythonArgv("confluent_client.py"), ccPythonModule("confluent_kafka"), true, true, false),
		ccConfluentGoFamily(),
		ccScriptFamily("kafka-python", ccPythonArgv("kafka_python_client.py"), ccPythonModule("kafka"), false, false, false),
		ccScriptFamily("kafkajs", func(t *testing.T) (string, []string) {
			dir := ccKafkajsDir(t)
			return dir, []string{"node", filepath.Join(dir, "client.js")}
		}, ccKafkajsCheck, true, false, false),
	}
}

// ---------------------------------------------------------------------------
// The features.

var ccFeatures = []struct{ key, title string }{
	{"keys-headers", "produce, consume: keys, headers"},
	{"group-resume", "group: commit, resume"},
	{"gzip", "gzip"},
	{"snappy", "snappy"},
	{"lz4", "lz4"},
	{"zstd", "zstd"},
	{"idempotent", "idempotent producer"},
	{"transactions", "transactions"},
}

// ccRoundTrip: franz-go writes some records, the client writes some (with
// codec when set); both the client and franz-go must read back all of them
// exactly.
func ccRoundTrip(t *testing.T, f *ccFamily, b *broker, topic, codec string) {
	createTopic(t, b.admin(t), topic, 1, nil)
	fromKgo := f.records("kgo", 12)
	fromClient := f.records(f.name, 12)
	kc := kgo.NoCompression()
	if codec != "" {
		kc = ccCodecs[codec].kgo
	}
	ccKgoProduce(t, b, topic, fromKgo, kc)
	if err := f.produce(t, b, topic, fromClient, ccProduceOpts{compression: codec}); err != nil {
		t.Fatalf("%s producing: %v", f.name, err)
	}
	want := append(append([]ccRecord{}, fromKgo...), fromClient...)
	got, err := f.consume(t, b, topic, ccConsumeOpts{partitions: 1, count: len(want)})
	if err != nil {
		t.Errorf("%s consuming: %v", f.name, err)
	}
	ccCheckRecords(t, f.name+" reading", want, got)
	ccCheckRecords(t, "franz-go reading what "+f.name+" wrote", want, ccKgoConsume(t, b, topic, len(want)))
	if codec != "" {
		var wrong []string
		for _, bt := range ccBatches(t, b, topic) {
			if got := bt.attributes & 7; got != ccCodecs[codec].id {
				wrong = append(wrong, fmt.Sprintf("offset %d (%d records): codec %d", bt.baseOffset, bt.records, got))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("%d stored batches are not compressed with %s (codec %d): %s", len(wrong), codec, ccCodecs[codec].id, strings.Join(wrong[:min(len(wrong), 4)], "; "))
		}
	}
}

// ccGroupResume: consume in a group and commit; after more records, the same
// group gets exactly the new ones.
func ccGroupResume(t *testing.T, f *ccFamily, b *broker, topic string) {
	const partitions = 3
	adm := b.admin(t)
	createTopic(t, adm, topic, partitions, nil)
	group := "compat-" + topic
	produce := func(prefix string, n int) map[string]bool {
		recs := f.records(prefix, n)
		want := map[string]bool{}
		for i := range recs {
			recs[i].Partition = int32(i % partitions)
			recs[i].Value = []byte(prefix + "-" + strconv.Itoa(i))
			want[string(recs[i].Value)] = true
		}
		ccKgoProduce(t, b, topic, recs, kgo.NoCompression())
		return want
	}
	check := func(round string, want map[string]bool, got []ccRecord) {
		t.Helper()
		seen := map[string]int{}
		for _, r := range got {
			seen[string(r.Value)]++
		}
		var bad []string
		for v, n := range seen {
			switch {
			case !want[v]:
				bad = append(bad, fmt.Sprintf("unexpected %q", v))
			case n > 1:
				bad = append(bad, fmt.Sprintf("%q %d times", v, n))
			}
		}
		for v := range want {
			if seen[v] == 0 {
				bad = append(bad, fmt.Sprintf("missing %q", v))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s: %d records, want the %d records %s: %s", round, len(got), len(want), round, strings.Join(bad[:min(len(bad), 8)], ", "))
		}
	}

	first := produce("first", 30)
	got, err := f.consume(t, b, topic, ccConsumeOpts{group: group, count: len(first), commit: true})
	if err != nil {
		t.Fatalf("%s consuming in group %s: %v", f.name, group, err)
	}
	check("produced first", first, got)

	// The commit is what the coordinator now holds: the end of every
	// partition.
	ctx := testCtx(t, 30*time.Second)
	eventually(t, 10*time.Second, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		for p := range int32(partitions) {
			end, _ := ends.Lookup(topic, p)
			c, ok := committed.Lookup(topic, p)
			if !ok || c.At != end.Offset {
				return fmt.Errorf("partition %d: committed %+v, end offset %d", p, c.Offset, end.Offset)
			}
		}
		return nil
	})

	second := produce("second", 15)
	got, err = f.consume(t, b, topic, ccConsumeOpts{group: group, count: len(second), linger: 500 * time.Millisecond, commit: true})
	if err != nil {
		t.Fatalf("%s consuming again in group %s: %v", f.name, group, err)
	}
	check("produced after the commit", second, got)
}

// ccIdempotent: an idempotent producer's records arrive once each, in
// batches stamped with a producer id.
func ccIdempotent(t *testing.T, f *ccFamily, b *broker, topic string) {
	createTopic(t, b.admin(t), topic, 1, nil)
	recs := f.records("idem", 40)
	if err := f.produce(t, b, topic, recs, ccProduceOpts{idempotent: true}); err != nil {
		t.Fatalf("%s producing idempotently: %v", f.name, err)
	}
	ccCheckRecords(t, "franz-go reading what "+f.name+" wrote", recs, ccKgoConsume(t, b, topic, len(recs)))
	for _, bt := range ccBatches(t, b, topic) {
		if bt.producerID < 0 {
			t.Errorf("batch at offset %d (%d records) has no producer id: %s did not produce idempotently", bt.baseOffset, bt.records, f.name)
			break
		}
	}
}

// ccTransactions: commit, abort, commit; read_committed sees the two
// committed transactions and nothing of the aborted one.
func ccTransactions(t *testing.T, m *ccMatrix, f *ccFamily, b *broker, topic string) {
	createTopic(t, b.admin(t), topic, 1, nil)
	id := "compat-txn-" + f.name
	committed1, aborted, committed2 := f.records("commit1", 10), f.records("abort", 10), f.records("commit2", 5)
	err := f.txn(t, b, topic, id, []ccTxn{{committed1, true}, {aborted, false}, {committed2, true}})
	if err != nil {
		if why := ccTxnNotServed(t, b, id); why != "" {
			m.notServed(f.name, "transactions")
			t.Skipf("transactions not served yet: %s (%s: %v)", why, f.name, err)
		}
		t.Fatalf("%s transactions: %v", f.name, err)
	}
	want := append(append([]ccRecord{}, committed1...), committed2...)
	got, err := f.consume(t, b, topic, ccConsumeOpts{partitions: 1, count: len(want), linger: time.Second, readCommitted: true})
	if err != nil {
		t.Errorf("%s consuming read_committed: %v", f.name, err)
	}
	ccCheckRecords(t, f.name+" reading read_committed", want, got)
	ccCheckRecords(t, "franz-go reading read_committed", want,
		ccKgoConsume(t, b, topic, len(want), kgo.FetchIsolationLevel(kgo.ReadCommitted())))
}

// ccTxnNotServed returns why when the broker answers FindCoordinator for the
// transactional id with COORDINATOR_NOT_AVAILABLE, and keeps answering so
// for 3 seconds (briefly it is also what a loading coordinator says).
func ccTxnNotServed(t *testing.T, b *broker, id string) string {
	cl := b.client(t)
	defer cl.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = id, 1
		req.CoordinatorKeys = []string{id}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil {
			return ""
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			code = resp.Coordinators[0].ErrorCode
		}
		if code != kerr.CoordinatorNotAvailable.Code {
			return ""
		}
		if time.Now().After(deadline) {
			return "FindCoordinator for a transactional id answers COORDINATOR_NOT_AVAILABLE"
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// The matrix and README's table.

type ccStatus int

const (
	ccNotRun    ccStatus = iota
	ccPass               // the subtest passed
	ccFail               // the subtest failed
	ccNA                 // the client (as installed) has no such feature
	ccMissingSt          // the client is not installed (skipped outside CI)
	ccNotServed          // skipped: the broker does not serve it yet
)

var ccCell = map[ccStatus]string{ccPass: "yes", ccFail: "FAILS", ccNA: "—", ccNotServed: "not yet"}

type ccMatrix struct {
	mu       sync.Mutex
	cells    map[[2]string]ccStatus
	versions map[string]string
}

func (m *ccMatrix) set(family, feature string, s ccStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cells[[2]string{family, feature}] == ccNotServed && s != ccFail {
		return
	}
	m.cells[[2]string{family, feature}] = s
}

func (m *ccMatrix) get(family, feature string) ccStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cells[[2]string{family, feature}]
}

func (m *ccMatrix) notServed(family, feature string) { m.set(family, feature, ccNotServed) }

// missing marks every feature of a family whose client is not installed;
// testName is the family's subtest, named after the family.
func (m *ccMatrix) missing(testName string) {
	family := testName[strings.LastIndex(testName, "/")+1:]
	for _, ft := range ccFeatures {
		m.set(family, ft.key, ccMissingSt)
	}
}

// feature runs fn as the subtest for one cell and records its outcome.
func (m *ccMatrix) feature(t *testing.T, family, feature string, supported bool, fn func(t *testing.T)) {
	if !supported {
		m.set(family, feature, ccNA)
		return
	}
	t.Run(feature, func(t *testing.T) {
		defer func() {
			switch {
			case t.Failed():
				m.set(family, feature, ccFail)
			case t.Skipped():
				if m.get(family, feature) != ccNotServed {
					m.set(family, feature, ccMissingSt)
				}
			default:
				m.set(family, feature, ccPass)
			}
		}()
		fn(t)
	})
}

func TestClientCompatibility(t *testing.T) {
	m := &ccMatrix{cells: map[[2]string]ccStatus{}, versions: map[string]string{}}
	families := ccFamilies()
	t.Run("clients", func(t *testing.T) {
		for _, f := range families {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				version, codecs := f.setup(t, m)
				m.mu.Lock()
				m.versions[f.name] = version
				m.mu.Unlock()
				b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"}})
				m.feature(t, f.name, "keys-headers", true, func(t *testing.T) {
					ccRoundTrip(t, f, b, "compat-rt", "")
				})
				m.feature(t, f.name, "group-resume", true, func(t *testing.T) {
					ccGroupResume(t, f, b, "compat-group")
				})
				for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
					has := false
					for _, c := range codecs {
						has = has || c == codec
					}
					m.feature(t, f.name, codec, has, func(t *testing.T) {
						ccRoundTrip(t, f, b, "compat-"+codec, codec)
					})
				}
				m.feature(t, f.name, "idempotent", f.idempotent, func(t *testing.T) {
					ccIdempotent(t, f, b, "compat-idempotent")
				})
				m.feature(t, f.name, "transactions", f.txn != nil, func(t *testing.T) {
					ccTransactions(t, m, f, b, "compat-txn")
				})
				b.CheckAlive(t)
			})
		}
	})

	testReport(t, ccRenderTable(m, families))
	readme := filepath.Join("..", "README.md")
	if os.Getenv("GOKAFKA_UPDATE_README") != "" {
		ccUpdateReadme(t, m, families, readme)
		return
	}
	ccCheckReadme(t, m, families, readme)
}

const (
	ccTableStart = "<!-- compat-table:start -->"
	ccTableEnd   = "<!-- compat-table:end -->"
)

func ccRenderTable(m *ccMatrix, families []*ccFamily) string {
	var sb strings.Builder
	sb.WriteString("| client | version |")
	for _, ft := range ccFeatures {
		sb.WriteString(" " + ft.title + " |")
	}
	sb.WriteString("\n|---|---|" + strings.Repeat("---|", len(ccFeatures)) + "\n")
	for _, f := range families {
		fmt.Fprintf(&sb, "| %s | %s |", f.name, m.versions[f.name])
		for _, ft := range ccFeatures {
			sb.WriteString(" " + ccCell[m.get(f.name, ft.key)] + " |")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\nyes: passed; —: the client, as installed here, does not have it; " +
		"not yet: the broker does not serve it yet; FAILS: the test fails. " +
		"Written by `GOKAFKA_UPDATE_README=1 go test -run TestClientCompatibility ./integration/` " +
		"(integration/clients_test.go), which otherwise fails when a \"yes\" here does not pass. " +
		"The Go clients franz-go, sarama and kafka-go are covered by the rest of the integration " +
		"tests and are not in this table.\n")
	return sb.String()
}

func ccReadmeParts(t *testing.T, path string) (before, table, after string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading README: %v", err)
	}
	s := string(data)
	i, j := strings.Index(s, ccTableStart), strings.Index(s, ccTableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %s … %s section", path, ccTableStart, ccTableEnd)
	}
	return s[:i+len(ccTableStart)], s[i+len(ccTableStart) : j], s[j:]
}

func ccUpdateReadme(t *testing.T, m *ccMatrix, families []*ccFamily, path string) {
	for _, f := range families {
		for _, ft := range ccFeatures {
			if s := m.get(f.name, ft.key); s == ccNotRun || s == ccMissingSt {
				t.Fatalf("not rewriting README: %s %s did not run; run all of TestClientCompatibility with every client installed", f.name, ft.key)
			}
		}
	}
	before, _, after := ccReadmeParts(t, path)
	out := before + "\n" + ccRenderTable(m, families) + after
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("README compatibility table rewritten:\n%s", ccRenderTable(m, families))
}

// ccCheckReadme fails for every "yes" in README's table whose test ran in
// this run and did not pass (or that no test here backs).
func ccCheckReadme(t *testing.T, m *ccMatrix, families []*ccFamily, path string) {
	_, table, _ := ccReadmeParts(t, path)
	known := map[string]bool{}
	for _, f := range families {
		known[f.name] = true
	}
	titles := map[string]string{}
	for _, ft := range ccFeatures {
		titles[ft.title] = ft.key
	}
	var header []string
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			continue
		}
		family := cells[0]
		for i := 2; i < len(cells) && i < len(header); i++ {
			if cells[i] != ccCell[ccPass] {
				continue
			}
			feature, ok := titles[header[i]]
			if !known[family] || !ok {
				t.Errorf("README claims %s %q, which no test here checks", family, header[i])
				continue
			}
			switch s := m.get(family, feature); s {
			case ccPass:
			case ccNotRun, ccMissingSt:
				t.Logf("README claims %s %s; not checked in this run (not run or client not installed)", family, feature)
			default:
				t.Errorf("README claims %s %s, but in this run it is %q: fix it, or rewrite the table with GOKAFKA_UPDATE_README=1", family, feature, ccCell[s])
			}
		}
	}
	if header == nil {
		t.Errorf("README's compatibility table is empty; write it with GOKAFKA_UPDATE_README=1")
	}
	t.Logf("this run's compatibility table:\n%s", ccRenderTable(m, families))
}

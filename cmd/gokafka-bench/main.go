// Command gokafka-bench is a load generator for Kafka-compatible brokers.
//
// Against any bootstrap address it produces (-mode produce), consumes what
// a topic holds (-mode consume) or measures produce-to-consume latency at a
// fixed rate (-mode e2e). With -scenario it starts the servers itself, runs
// gokafka and a peer (franz-go's kfake, run as a child process) in
// alternating rounds on fresh servers, and prints the median of every
// metric per system with the ratio and the spread of the rounds.
//
//	go build -o /tmp/gokafka ./cmd/gokafka
//	go run ./cmd/gokafka-bench -scenario all -gokafka-bin /tmp/gokafka -peer kfake -rounds 3
//	go run ./cmd/gokafka-bench -mode produce -brokers 127.0.0.1:9092 -topic t -acks all
//
// See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the parsed command line.
type options struct {
	mode     string
	brokers  string
	scenario string

	gokafkaBin   string
	peer         string
	rounds       int
	consumeBytes int64
	rssAfter     time.Duration
	idleSettle   time.Duration
	idleWindow   time.Duration
	idleWritten  bool
	// scalePartitions replaces s8's 10,000 partitions when positive.
	scalePartitions int
	scaleISRWait    time.Duration
	// s9: client connections, the interval of each one's records, and
	// the measured window once all are connected.
	s9Conns    int
	s9Parallel int
	s9Interval time.Duration
	s9Window   time.Duration
	// s10: bytes of the moved partition, the producer's records/s, the
	// window measured before the move, and the throttle rate (bytes/s).
	s10Bytes     int64
	s10Rate      int
	s10Before    time.Duration
	s10Throttle  int64
	kfakePersist bool
	dropCaches   bool
	keepLogs     bool
	logLevel     string
	tls          bool
	jsonPath     string
	createTopic  bool

	load loadConfig
	// Whether these were given, so scenarios keep their own values
	// otherwise.
	lingerSet, recordSizeSet bool

	// hidden: the kfake child process
	serveKfake bool
	kfakePorts string
	kfakeDir   string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("gokafka-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mode, "mode", "", "run one workload against -brokers: produce, consume or e2e")
	fs.StringVar(&o.brokers, "brokers", "127.0.0.1:9092", "comma-separated bootstrap addresses (-mode)")
	fs.StringVar(&o.load.topic, "topic", "gokafka-bench", "topic (-mode)")
	fs.BoolVar(&o.createTopic, "create-topic", true, "create the topic with -partitions and -rf first if it does not exist (-mode produce, e2e)")
	fs.StringVar(&o.load.acks, "acks", "1", "0, 1 or all (-mode)")
	fs.BoolVar(&o.load.idempotent, "idempotent", false, "idempotent producer; needs -acks all (-mode)")
	fs.IntVar(&o.load.recordSize, "record-size", 1024, "record value size in bytes (-mode; overrides the scenarios' sizes when given)")
	fs.IntVar(&o.load.partitions, "partitions", 1, "partitions of a topic created (-mode)")
	fs.IntVar(&o.load.rf, "rf", 1, "replication factor of a topic created (-mode)")
	fs.StringVar(&o.load.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&o.load.linger, "linger", 10*time.Millisecond, "producer linger (franz-go's default 10ms; the e2e scenarios use 0 unless given)")
	fs.IntVar(&o.load.batchMaxBytes, "batch-max-bytes", 1000012, "producer batch size limit in bytes (franz-go's default)")
	fs.IntVar(&o.load.producers, "producers", 1, "concurrent producer clients")
	fs.DurationVar(&o.load.duration, "duration", 10*time.Second, "measured time of a produce or e2e run, and of each such scenario round")
	fs.IntVar(&o.load.rate, "rate", 10000, "records/s of an e2e run")
	fs.DurationVar(&o.load.warmup, "warmup", time.Second, "e2e: time before -duration whose records are not measured")
	fs.Int64Var(&o.load.maxBytes, "max-bytes", 0, "consume: stop after this many value bytes (0: at the end offsets taken at the start)")
	fs.Int64Var(&o.load.maxRecords, "max-records", 0, "consume: stop after this many records (0: at the end offsets taken at the start)")

	fs.StringVar(&o.scenario, "scenario", "", "run scenarios on servers started here: s1…s10, s5-rf3 style names, a comma list, or all (all but s8, s9 and s10)")
	fs.StringVar(&o.gokafkaBin, "gokafka-bin", "", "gokafka binary the scenarios start")
	fs.StringVar(&o.peer, "peer", sysKfake, "system compared with gokafka: kfake, or none")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per system and scenario")
	consumeBytes := fs.String("consume-bytes", "1GiB", "s4: bytes written beforehand and read back (suffixes KiB, MiB, GiB, KB, MB, GB)")
	fs.DurationVar(&o.rssAfter, "rss-after", 3*time.Second, "s6: read the servers' RSS this long after their start")
	fs.DurationVar(&o.idleSettle, "idle-settle", 10*time.Second, "s7: wait this long after the topic is ready before measuring")
	fs.DurationVar(&o.idleWindow, "idle-window", 30*time.Second, "s7: measure the idle servers' CPU over this long")
	fs.BoolVar(&o.idleWritten, "idle-written", false, "s7: write one record to each partition before the idle window (a partition never written to has no files)")
	fs.IntVar(&o.scalePartitions, "scale-partitions", 0, "s8: partitions of its topic instead of 10000 (each takes one open file per replica: its segment's log)")
	fs.DurationVar(&o.scaleISRWait, "scale-isr-wait", 2*time.Minute, "s8: how long to wait for the restarted node to be back in every ISR")
	fs.IntVar(&o.s9Conns, "s9-conns", 2000, "s9: producer clients, each with its own connection to its partition's leader")
	fs.IntVar(&o.s9Parallel, "s9-parallel", 64, "s9: clients setting up at once (-s9-conns for a reconnection storm)")
	fs.DurationVar(&o.s9Interval, "s9-interval", time.Second, "s9: each client produces one record this often")
	fs.DurationVar(&o.s9Window, "s9-window", 20*time.Second, "s9: measure CPU, memory and latency over this long once every client is connected")
	s10Bytes := fs.String("s10-bytes", "1GB", "s10: bytes written to the partition before it is moved (suffixes as -consume-bytes)")
	fs.IntVar(&o.s10Rate, "s10-rate", 1000, "s10: records/s of the producer running during the move")
	fs.DurationVar(&o.s10Before, "s10-before", 5*time.Second, "s10: window measured before the reassignment starts")
	s10Throttle := fs.String("s10-throttle", "50MB", "s10-throttled: leader and follower.replication.throttled.rate, bytes per second")
	fs.BoolVar(&o.kfakePersist, "kfake-persist", true, "give kfake a data directory so it writes its segments to disk as gokafka does")
	fs.BoolVar(&o.dropCaches, "drop-caches", false, "before each round, sync and drop the kernel's page cache (needs root): with the cache full of other files every write first reclaims a page, which on small VMs costs several times the copy itself and varies with what ran before")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep the servers' temp dirs (data and logs) instead of removing them")
	fs.StringVar(&o.logLevel, "gokafka-log-level", "warn", "log.level of the gokafka servers (their logs are in the temp dirs; see -keep-logs)")
	fs.BoolVar(&o.tls, "tls", false, "scenarios: gokafka's listeners (client, inter-broker, controller) are SSL with certificates from `gokafka certs`, and the clients connect over TLS; needs -peer none")
	fs.StringVar(&o.jsonPath, "json", "", "also write the scenario results to this JSON file")

	fs.BoolVar(&o.serveKfake, "serve-kfake", false, "internal: run a kfake cluster until SIGTERM")
	fs.StringVar(&o.kfakePorts, "kfake-ports", "", "internal: comma-separated ports of the kfake brokers")
	fs.StringVar(&o.kfakeDir, "kfake-dir", "", "internal: kfake data directory")

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "linger":
			o.lingerSet = true
		case "record-size":
			o.recordSizeSet = true
		}
	})
	n, err := parseSize(*consumeBytes)
	if err != nil {
		return nil, fmt.Errorf("-consume-bytes: %v", err)
	}
	o.consumeBytes = n
	if o.s10Bytes, err = parseSize(*s10Bytes); err != nil {
		return nil, fmt.Errorf("-s10-bytes: %v", err)
	}
	if o.s10Throttle, err = parseSize(*s10Throttle); err != nil {
		return nil, fmt.Errorf("-s10-throttle: %v", err)
	}
	for _, b := range strings.Split(o.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.load.brokers = append(o.load.brokers, b)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// validate checks the combination of options.
func (o *options) validate() error {
	if o.serveKfake {
		if o.kfakePorts == "" {
			return errors.New("-serve-kfake needs -kfake-ports")
		}
		return nil
	}
	if (o.mode == "") == (o.scenario == "") {
		return errors.New("give exactly one of -mode (produce, consume, e2e) and -scenario")
	}
	l := &o.load
	switch l.acks {
	case "0", "1", "all":
	default:
		return fmt.Errorf("-acks %q: want 0, 1 or all", l.acks)
	}
	if l.idempotent && l.acks != "all" {
		return errors.New("-idempotent needs -acks all")
	}
	switch l.compression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("-compression %q: want none, gzip, snappy, lz4 or zstd", l.compression)
	}
	switch {
	case l.recordSize < 1:
		return fmt.Errorf("-record-size %d: must be at least 1", l.recordSize)
	case l.partitions < 1:
		return fmt.Errorf("-partitions %d: must be at least 1", l.partitions)
	case l.rf < 1 || l.rf > 32767:
		return fmt.Errorf("-rf %d: must be in [1, 32767]", l.rf)
	case l.linger < 0:
		return fmt.Errorf("-linger %v: must not be negative", l.linger)
	case l.batchMaxBytes < 1 || l.batchMaxBytes > 1<<30:
		return fmt.Errorf("-batch-max-bytes %d: must be in [1, 2^30]", l.batchMaxBytes)
	case l.producers < 1:
		return fmt.Errorf("-producers %d: must be at least 1", l.producers)
	case l.duration <= 0:
		return fmt.Errorf("-duration %v: must be positive", l.duration)
	case l.rate < 1:
		return fmt.Errorf("-rate %d: must be at least 1", l.rate)
	case l.warmup < 0:
		return fmt.Errorf("-warmup %v: must not be negative", l.warmup)
	case l.maxBytes < 0 || l.maxRecords < 0:
		return errors.New("-max-bytes and -max-records must not be negative")
	}
	if o.mode != "" {
		switch o.mode {
		case "produce", "consume":
		case "e2e":
			if l.recordSize < 8 {
				return fmt.Errorf("-mode e2e needs -record-size of at least 8 (the send time travels in the value), got %d", l.recordSize)
			}
		default:
			return fmt.Errorf("-mode %q: want produce, consume or e2e", o.mode)
		}
		if len(l.brokers) == 0 {
			return errors.New("-brokers is empty")
		}
		return nil
	}
	if _, err := selectScenarios(o.scenario); err != nil {
		return err
	}
	if o.gokafkaBin == "" {
		return errors.New("-scenario needs -gokafka-bin (build it with go build -o /tmp/gokafka ./cmd/gokafka)")
	}
	if st, err := os.Stat(o.gokafkaBin); err != nil || st.IsDir() {
		return fmt.Errorf("-gokafka-bin %q: not a file", o.gokafkaBin)
	}
	// The servers run in their temp dirs, so a relative path would not
	// resolve there.
	abs, err := filepath.Abs(o.gokafkaBin)
	if err != nil {
		return err
	}
	o.gokafkaBin = abs
	switch o.peer {
	case sysKfake, "none":
	default:
		return fmt.Errorf("-peer %q: want kfake or none", o.peer)
	}
	if o.tls && o.peer != "none" {
		return errors.New("-tls: the peer is run without TLS; use -peer none")
	}
	if o.rounds < 1 {
		return fmt.Errorf("-rounds %d: must be at least 1", o.rounds)
	}
	if o.consumeBytes < 1 {
		return fmt.Errorf("-consume-bytes %d: must be positive", o.consumeBytes)
	}
	if o.recordSizeSet && o.load.recordSize < 8 {
		return fmt.Errorf("-record-size %d: the scenarios need at least 8 bytes", o.load.recordSize)
	}
	if o.idleSettle < 0 || o.idleWindow <= 0 {
		return fmt.Errorf("-idle-settle %v, -idle-window %v: want a non-negative settle and a positive window", o.idleSettle, o.idleWindow)
	}
	if o.s9Conns < 1 || o.s9Parallel < 1 || o.s9Interval <= 0 || o.s9Window <= 0 {
		return fmt.Errorf("-s9-conns %d, -s9-parallel %d, -s9-interval %v, -s9-window %v: want at least one connection and client, and positive durations", o.s9Conns, o.s9Parallel, o.s9Interval, o.s9Window)
	}
	if o.s10Bytes < 1 || o.s10Rate < 1 || o.s10Before <= 0 || o.s10Throttle < 1 {
		return fmt.Errorf("-s10-bytes %d, -s10-rate %d, -s10-before %v, -s10-throttle %d: want positive values", o.s10Bytes, o.s10Rate, o.s10Before, o.s10Throttle)
	}
	if o.rssAfter < 0 {
		return fmt.Errorf("-rss-after %v: must not be negative", o.rssAfter)
	}
	return nil
}

// parseSize reads a byte count with an optional unit suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n * mult, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gokafka-bench:", err)
		return 2
	}
	if o.serveKfake {
		if err := serveKfake(o.kfakePorts, o.kfakeDir); err != nil {
			fmt.Fprintln(stderr, "gokafka-bench -serve-kfake:", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.mode != "" {
		return runMode(ctx, o, stdout, stderr)
	}
	scs, _ := selectScenarios(o.scenario)
	r := &runner{opts: o, log: stderr}
	results := r.run(ctx, scs)
	fmt.Fprintf(stdout, "gokafka-bench %s, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), strings.Join(os.Args[1:], " "))
	writeTables(stdout, results, o.rounds)
	code := 0
	for _, res := range results {
		for _, rr := range res.Rounds {
			if rr.Err != "" {
				code = 1
			}
		}
	}
	if ctx.Err() != nil {
		code = 1
	}
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, results); err != nil {
			fmt.Fprintln(stderr, "gokafka-bench: writing JSON:", err)
			return 1
		}
	}
	return code
}

// runMode runs one workload against -brokers and prints its metrics.
func runMode(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	c := &o.load
	if o.createTopic && o.mode != "consume" {
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := ensureTopic(tctx, c.brokers, c.topic, c.partitions, c.rf)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "gokafka-bench:", err)
			return 1
		}
	}
	var res *result
	var err error
	var about string
	switch o.mode {
	case "produce":
		about = fmt.Sprintf("produce to %s: acks=%s idempotent=%v, %d B records, %d producer(s), linger %v, compression %s, %v.\n"+
			"produce req = produce request round trip (kgo HookBrokerE2E, write start to response read); record ack = Produce call to promise, per record",
			c.topic, c.acks, c.idempotent, c.recordSize, c.producers, c.linger, c.compression, c.duration)
		res, err = runProduce(ctx, c)
	case "consume":
		about = fmt.Sprintf("consume %s from the start to the end offsets taken at the start", c.topic)
		res, err = runConsume(ctx, c)
	case "e2e":
		about = fmt.Sprintf("end to end on %s: %d rec/s, %d B records, acks=%s, linger %v, %v after %v warm-up; latency from the Produce call to receipt by a consumer in this process",
			c.topic, c.rate, c.recordSize, c.acks, c.linger, c.duration, c.warmup)
		res, err = runEndToEnd(ctx, c)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gokafka-bench:", err)
		return 1
	}
	fmt.Fprintln(stdout, about)
	fmt.Fprintln(stdout)
	rows := [][]string{{"metric", "unit", "value"}}
	for _, m := range res.Metrics {
		rows = append(rows, []string{m.Name, m.Unit, fmtNum(m.Value)})
	}
	writeTable(stdout, rows)
	return 0
}

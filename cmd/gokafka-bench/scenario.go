package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kinds of scenario.
const (
	kindProduce  = "produce"
	kindConsume  = "consume"
	kindE2E      = "e2e"
	kindStartup  = "startup"
	kindIdle     = "idle"
	kindScale    = "scale"
	kindConns    = "connections"
	kindReassign = "reassign"
)

// scenario is one fixed comparison. Fields left zero take the command-line
// values (record size, duration, ...) set in scenarioLoad.
type scenario struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Kind  string `json:"kind"`
	Nodes int    `json:"nodes"`

	partitions int
	rf         int
	acks       string
	idempotent bool
	recordSize int
	// throttled: s10 with the replication throttle set.
	throttled bool
}

// scenarios in the order -scenario all runs them. -scenario s5 selects
// every entry whose name starts with "s5-".
var scenarios = []scenario{
	{Name: "s1", Kind: kindProduce, Nodes: 1, partitions: 1, rf: 1, acks: "1", recordSize: 1024,
		Title: "produce, 1 node, 1 partition, acks=1, 1 KiB records"},
	{Name: "s2", Kind: kindProduce, Nodes: 3, partitions: 3, rf: 3, acks: "all", recordSize: 1024,
		Title: "produce, 3 nodes, 3 partitions, RF=3, acks=all, 1 KiB records"},
	{Name: "s3", Kind: kindProduce, Nodes: 3, partitions: 3, rf: 3, acks: "all", idempotent: true, recordSize: 100,
		Title: "produce, 3 nodes, 3 partitions, RF=3, acks=all, idempotent, 100 B records"},
	{Name: "s4", Kind: kindConsume, Nodes: 1, partitions: 1, rf: 1, acks: "1", recordSize: 1024,
		Title: "consume from the start what was written beforehand, 1 node, 1 partition, 1 KiB records"},
	{Name: "s5-rf3", Kind: kindE2E, Nodes: 3, partitions: 3, rf: 3, acks: "all", recordSize: 1024,
		Title: "end-to-end latency at a fixed rate, 3 nodes, 3 partitions, RF=3, acks=all, 1 KiB records"},
	{Name: "s5-1n", Kind: kindE2E, Nodes: 1, partitions: 1, rf: 1, acks: "1", recordSize: 1024,
		Title: "end-to-end latency at a fixed rate, 1 node, 1 partition, acks=1, 1 KiB records"},
	{Name: "s6-1n", Kind: kindStartup, Nodes: 1,
		Title: "start-up and idle memory, 1 node"},
	{Name: "s6-3n", Kind: kindStartup, Nodes: 3,
		Title: "start-up and idle memory, 3 nodes"},
	{Name: "s7-0", Kind: kindIdle, Nodes: 3, partitions: 0, rf: 3,
		Title: "idle cost, 3 nodes, no topics"},
	{Name: "s7-1k", Kind: kindIdle, Nodes: 3, partitions: 1000, rf: 3,
		Title: "idle cost, 3 nodes, 1,000 partitions RF=3"},
	{Name: "s7-5k", Kind: kindIdle, Nodes: 3, partitions: 5000, rf: 3,
		Title: "idle cost, 3 nodes, 5,000 partitions RF=3"},
	{Name: "s7-10k", Kind: kindIdle, Nodes: 3, partitions: 10000, rf: 3,
		Title: "idle cost, 3 nodes, 10,000 partitions RF=3"},
	{Name: "s8", Kind: kindScale, Nodes: 3, partitions: 10000, rf: 3, acks: "all", recordSize: 100,
		Title: "10,000 partitions RF=3: created, first-produced, one node restarted"},
	{Name: "s9-3n", Kind: kindConns, Nodes: 3, partitions: 3, rf: 3, acks: "all", recordSize: 100,
		Title: "2,000 producer connections, one 100 B acks=all record a second each, 3 nodes, 3 partitions, RF=3"},
	{Name: "s9-1n", Kind: kindConns, Nodes: 1, partitions: 1, rf: 1, acks: "all", recordSize: 100,
		Title: "2,000 producer connections, one 100 B acks=all record a second each, 1 node, 1 partition"},
	{Name: "s10-free", Kind: kindReassign, Nodes: 4, rf: 3, acks: "all", recordSize: 1024,
		Title: "reassignment of a partition of -s10-bytes (1 GB) [1,2,3] → [2,3,4] under load, 4 nodes, no throttle"},
	{Name: "s10-throttled", Kind: kindReassign, Nodes: 4, rf: 3, acks: "all", recordSize: 1024, throttled: true,
		Title: "reassignment of a partition of -s10-bytes (1 GB) [1,2,3] → [2,3,4] under load, 4 nodes, replication throttle"},
}

// selectScenarios resolves a -scenario value: all, or a comma-separated
// list of names or name prefixes (s5 means s5-rf3 and s5-1n).
func selectScenarios(spec string) ([]scenario, error) {
	if spec == "all" {
		// s8, s9 and s10 run only when named: each takes minutes, s8 at
		// 10,000 partitions needs more open files than many machines
		// allow, and s10 writes a gigabyte before it starts.
		var out []scenario
		for _, sc := range scenarios {
			if sc.Kind != kindScale && sc.Kind != kindConns && sc.Kind != kindReassign {
				out = append(out, sc)
			}
		}
		return out, nil
	}
	var out []scenario
	for _, want := range strings.Split(spec, ",") {
		want = strings.TrimSpace(want)
		found := false
		for _, sc := range scenarios {
			if sc.Name == want || strings.HasPrefix(sc.Name, want+"-") {
				if !slices.ContainsFunc(out, func(o scenario) bool { return o.Name == sc.Name }) {
					out = append(out, sc)
				}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (want s1…s10, a full name such as s5-rf3, or all)", want)
		}
	}
	return out, nil
}

// roundResult is one system's measurement in one round.
type roundResult struct {
	System  string   `json:"system"`
	Round   int      `json:"round"`
	Metrics []metric `json:"metrics,omitempty"`
	Err     string   `json:"error,omitempty"`
}

// summaryRow is one metric across the rounds of both systems.
type summaryRow struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Higher bool   `json:"higher_is_better"`
	// Median, Spread by system name.
	Median map[string]float64 `json:"median"`
	Spread map[string]spread  `json:"spread"`
	Ratio  float64            `json:"ratio_gokafka_to_peer"`
}

type scenarioResult struct {
	scenario
	Settings string        `json:"settings"`
	Rounds   []roundResult `json:"rounds"`
	Summary  []summaryRow  `json:"summary"`
	Notes    []string      `json:"notes,omitempty"`
	Elapsed  float64       `json:"elapsed_seconds"`
	Systems  []string      `json:"systems"`
}

// runner runs scenarios from the command-line options.
type runner struct {
	opts *options
	log  io.Writer // progress, one line per round
}

func (r *runner) systems() []string {
	if r.opts.peer == "none" {
		return []string{sysGokafka}
	}
	return []string{sysGokafka, r.opts.peer}
}

// scenarioLoad is the workload of sc with the command-line values filled in.
func (r *runner) scenarioLoad(sc scenario, brokers []string) *loadConfig {
	o := r.opts
	c := &loadConfig{
		brokers:       brokers,
		topic:         "bench-" + sc.Name,
		acks:          sc.acks,
		idempotent:    sc.idempotent,
		recordSize:    sc.recordSize,
		partitions:    sc.partitions,
		rf:            sc.rf,
		compression:   o.load.compression,
		linger:        o.load.linger,
		batchMaxBytes: o.load.batchMaxBytes,
		producers:     o.load.producers,
		duration:      o.load.duration,
		rate:          o.load.rate,
		warmup:        o.load.warmup,
	}
	// The end-to-end scenarios measure the servers' latency, so the
	// producer sends at once unless -linger was given.
	if sc.Kind == kindE2E && !o.lingerSet {
		c.linger = 0
	}
	if sc.Kind == kindScale && o.scalePartitions > 0 {
		c.partitions = o.scalePartitions
	}
	if o.recordSizeSet && sc.Kind != kindStartup {
		c.recordSize = o.load.recordSize
	}
	return c
}

func (r *runner) settings(sc scenario) string {
	c := r.scenarioLoad(sc, nil)
	switch sc.Kind {
	case kindIdle:
		return fmt.Sprintf("%d partitions RF %d in one topic, then %v to settle, then CPU (utime+stime of /proc/PID/stat) over %v with no client connected, as CPU seconds per minute per node; RSS (VmRSS) per node at its end", sc.partitions, sc.rf, r.opts.idleSettle, r.opts.idleWindow)
	case kindScale:
		return fmt.Sprintf("kadm CreateTopic (%d partitions, RF %d) timed to its answer; then one acks=all %d B record to every partition; then the last node stopped by SIGTERM and started again, timed to its first accept, to a Metadata answer from it listing every broker, and to its return to every ISR", c.partitions, c.rf, c.recordSize)
	case kindConns:
		return fmt.Sprintf("%d kgo clients started %d at a time, each pinned to one of %d partitions (RF %d) and producing one %d B acks=all record every %v, linger 0, not idempotent; set-up timed from the new client to its first acknowledged record; then, with every client connected, server CPU per node, RSS per node and ack latency over %v; RSS per connection is the growth of the nodes' RSS over their idle RSS divided by the sockets they gained", r.opts.s9Conns, r.opts.s9Parallel, c.partitions, c.rf, c.recordSize, r.opts.s9Interval, r.opts.s9Window)
	case kindReassign:
		thr := "no throttle"
		if sc.throttled {
			thr = fmt.Sprintf("leader and follower.replication.throttled.rate %.0f MB/s on every broker, leader throttled replicas 0:1,0:2,0:3, follower 0:4", float64(r.opts.s10Throttle)/MB)
		}
		return fmt.Sprintf("topic of 1 partition on [1,2,3] filled with %.0f MB (%d B records, acks=1, not measured); a producer sends %d acks=all %d B records/s (linger 0) to a second topic on [1,2,4]; after 1 s warm-up and %v measured before, AlterPartitionReassignments moves the partition to [2,3,4] (%s), timed until ListPartitionReassignments lists nothing and the replicas [2,3,4] are all in the ISR", float64(r.opts.s10Bytes)/MB, c.recordSize, r.opts.s10Rate, c.recordSize, r.opts.s10Before, thr)
	case kindStartup:
		return fmt.Sprintf("accept polled every 1 ms; first produce: kadm CreateTopic (1 partition, RF %d) then one acks=all record; idle RSS %v after process start", sc.Nodes, r.opts.rssAfter)
	case kindConsume:
		return fmt.Sprintf("%.0f MiB written beforehand (acks=1, not measured), read by one client from offset 0 to the end offsets taken at its start", float64(r.opts.consumeBytes)/(1<<20))
	case kindE2E:
		return fmt.Sprintf("%d rec/s from one producer for %v after %v warm-up, linger %v, compression %s, one consumer in the same process", c.rate, c.duration, c.warmup, c.linger, c.compression)
	default:
		return fmt.Sprintf("%d producer client(s) for %v, linger %v, batch max %d B, compression %s", c.producers, c.duration, c.linger, c.batchMaxBytes, c.compression)
	}
}

// run runs every selected scenario, alternating the systems round by round
// (gokafka, peer, gokafka, peer, ...), each on a fresh server.
func (r *runner) run(ctx context.Context, scs []scenario) []*scenarioResult {
	var out []*scenarioResult
	for _, sc := range scs {
		start := time.Now()
		res := &scenarioResult{scenario: sc, Settings: r.settings(sc), Systems: r.systems()}
		if sc.Kind == kindReassign && r.opts.peer != "none" {
			// kfake answers AlterPartitionReassignments without error and
			// moves nothing: it keeps one copy whatever the replicas.
			res.Systems = []string{sysGokafka}
			res.Notes = append(res.Notes, r.opts.peer+" cannot reassign partitions (it accepts AlterPartitionReassignments and copies nothing), so gokafka runs alone")
		} else if sc.Nodes > 1 && r.opts.peer == sysKfake {
			res.Notes = append(res.Notes, "kfake runs 3 brokers in one process and copies nothing between them: RF=3 is accepted and reported in sync, but nothing is replicated")
		}
		for round := 1; round <= r.opts.rounds; round++ {
			for _, system := range res.Systems {
				fmt.Fprintf(r.log, "%s %s: round %d/%d %s ...", time.Now().Format("15:04:05"), sc.Name, round, r.opts.rounds, system)
				m, err := r.round(ctx, sc, system)
				rr := roundResult{System: system, Round: round, Metrics: m}
				if err != nil {
					rr.Err = err.Error()
					fmt.Fprintf(r.log, " error: %v\n", err)
				} else {
					fmt.Fprintf(r.log, " %s\n", brief(m))
				}
				res.Rounds = append(res.Rounds, rr)
				if ctx.Err() != nil {
					break
				}
			}
		}
		res.Summary = summarize(res.Rounds, res.Systems)
		res.Elapsed = time.Since(start).Seconds()
		out = append(out, res)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

func brief(ms []metric) string {
	var parts []string
	for _, m := range ms[:min(len(ms), 3)] {
		parts = append(parts, fmt.Sprintf("%s %s", fmtNum(m.Value), m.Name))
	}
	return strings.Join(parts, ", ")
}

// round runs one scenario once against a fresh server of system.
func (r *runner) round(ctx context.Context, sc scenario, system string) (metrics []metric, err error) {
	if r.opts.dropCaches {
		if err := dropPageCache(); err != nil {
			return nil, fmt.Errorf("-drop-caches: %w", err)
		}
	}
	srv, err := startServer(serverSpec{
		system:       system,
		nodes:        sc.Nodes,
		gokafkaBin:   r.opts.gokafkaBin,
		kfakePersist: r.opts.kfakePersist,
		keepLogs:     r.opts.keepLogs,
		logLevel:     r.opts.logLevel,
		tls:          r.opts.tls,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := srv.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	if sc.Kind == kindStartup {
		return r.startup(ctx, srv)
	}
	if err := srv.waitReady(60 * time.Second); err != nil {
		return nil, err
	}
	if sc.Kind == kindIdle {
		return r.idle(ctx, srv, sc)
	}
	if sc.Kind == kindScale {
		return r.scale(ctx, sc, srv)
	}
	if sc.Kind == kindConns {
		return r.connections(ctx, sc, srv)
	}
	if sc.Kind == kindReassign {
		return r.reassign(ctx, sc, srv)
	}
	c := r.scenarioLoad(sc, srv.addrs)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = ensureTopic(tctx, c.brokers, c.topic, c.partitions, c.rf)
	cancel()
	if err != nil {
		return nil, err
	}
	if sc.Kind == kindConsume {
		fill := *c
		fill.totalBytes = r.opts.consumeBytes
		fill.duration = time.Hour
		fill.producers = 1
		if _, err := runProduce(ctx, &fill); err != nil {
			return nil, fmt.Errorf("writing the data to consume: %w", err)
		}
	}

	// The measured phase: from here to the end of the workload, the
	// server's CPU time counts.
	cpu0, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, c.duration+c.warmup+5*time.Minute)
	defer cancel()
	var res *result
	switch sc.Kind {
	case kindProduce:
		res, err = runProduce(wctx, c)
	case kindConsume:
		res, err = runConsume(wctx, c)
	case kindE2E:
		res, err = runEndToEnd(wctx, c)
	}
	if err != nil {
		return nil, err
	}
	cpu1, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	if err := srv.checkAlive(); err != nil {
		return nil, err
	}
	what := "written"
	if sc.Kind == kindConsume {
		what = "read"
	}
	res.add("server CPU", "s", (cpu1 - cpu0).Seconds(), false)
	res.add("server CPU per MB "+what, "s/MB", ratio((cpu1-cpu0).Seconds(), float64(res.Bytes)/MB), false)
	return res.Metrics, nil
}

// startup measures the time from starting the server's processes to the
// last node accepting a TCP connection, to a first produced record being
// acknowledged, and the resident memory once the server has been up for
// rssAfter.
func (r *runner) startup(ctx context.Context, srv *server) ([]metric, error) {
	acceptAt, err := srv.waitAccept(60*time.Second, time.Millisecond)
	if err != nil {
		return nil, err
	}
	started := srv.procs[0].started
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cl, err := newClient(srv.addrs,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(15000)
	const topic = "bench-startup"
	for {
		_, err := adm.CreateTopic(ctx, 1, int16(len(srv.addrs)), nil, topic)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("creating %s: %v", topic, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
		return nil, fmt.Errorf("first produce: %v", err)
	}
	produceAt := time.Since(started)
	cl.Close()

	if wait := time.Until(started.Add(r.opts.rssAfter)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := srv.checkAlive(); err != nil {
		return nil, err
	}
	rss, err := srv.rss()
	if err != nil {
		return nil, err
	}
	cpu, err := srv.cpu()
	if err != nil {
		return nil, err
	}
	res := &result{}
	res.add("start to first accept", "ms", ms(acceptAt), false)
	res.add("start to first acked produce", "ms", ms(produceAt), false)
	res.add(fmt.Sprintf("RSS at %v", r.opts.rssAfter), "MiB", float64(rss)/(1<<20), false)
	res.add(fmt.Sprintf("CPU used by %v", r.opts.rssAfter), "s", cpu.Seconds(), false)
	return res.Metrics, nil
}

// idle measures what a server costs doing nothing: with sc.partitions
// created and settled, the CPU its processes use over idleWindow and their
// resident memory, per node (a one-process peer's cost is shared among
// its nodes).
func (r *runner) idle(ctx context.Context, srv *server, sc scenario) ([]metric, error) {
	// Each replica holds its segment's log file open (the indexes are
	// in memory); a node short of descriptors fails its log dir and stops.
	if need := sc.partitions*sc.rf/sc.Nodes + 1000; sc.partitions > 0 {
		if limit, ok := openFilesLimit(); ok && uint64(need) > limit {
			return nil, fmt.Errorf("%d partitions RF %d need about %d open files per node; RLIMIT_NOFILE allows %d here", sc.partitions, sc.rf, need, limit)
		}
	}
	if sc.partitions > 0 {
		tctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		err := createIdleTopic(tctx, srv.addrs, "bench-"+sc.Name, sc.partitions, sc.rf)
		if err == nil && r.opts.idleWritten {
			var cl *kgo.Client
			if cl, err = oneEachClient(srv.addrs, sc.partitions); err == nil {
				err = produceOneEach(tctx, cl, "bench-"+sc.Name, sc.partitions, 100)
				cl.Close()
			}
		}
		cancel()
		if err != nil {
			return nil, err
		}
	}
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(r.opts.idleSettle); err != nil {
		return nil, err
	}
	cpu0, err := srv.cpuEach()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := sleep(r.opts.idleWindow); err != nil {
		return nil, err
	}
	cpu1, err := srv.cpuEach()
	if err != nil {
		return nil, err
	}
	minutes := time.Since(t0).Minutes()
	if err := srv.checkAlive(); err != nil {
		return nil, err
	}
	rss, err := srv.rssEach()
	if err != nil {
		return nil, err
	}
	nodes := float64(sc.Nodes)
	var cpuSum, cpuMax, rssSum, rssMax float64
	for i := range cpu0 {
		c := (cpu1[i] - cpu0[i]).Seconds() / minutes
		cpuSum += c
		cpuMax = max(cpuMax, c)
		m := float64(rss[i]) / (1 << 20)
		rssSum += m
		rssMax = max(rssMax, m)
	}
	res := &result{}
	res.add("idle CPU per node", "s/min", cpuSum/nodes, false)
	res.add("idle CPU per node, share of a core", "%", cpuSum/nodes/60*100, false)
	res.add("idle CPU, busiest process", "s/min", cpuMax, false)
	res.add("RSS per node", "MiB", rssSum/nodes, false)
	res.add("RSS, largest process", "MiB", rssMax, false)
	return res.Metrics, nil
}

// createIdleTopic creates topic and waits until every partition has a
// leader and its full ISR, giving the creation as long as ctx allows.
func createIdleTopic(ctx context.Context, brokers []string, topic string, partitions, rf int) error {
	cl, err := newClient(brokers, kgo.RetryTimeout(10*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(600000)
	if _, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), nil, topic); err != nil && ctx.Err() != nil {
		return fmt.Errorf("creating topic %s: %v", topic, err)
	}
	for {
		err := topicReady(ctx, cl, topic, partitions, rf)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("topic %s not ready: %v", topic, err)
		}
		time.Sleep(time.Second)
	}
}

// oneEachClient is a client for produceOneEach, able to buffer a record
// for each of partitions.
func oneEachClient(brokers []string, partitions int) (*kgo.Client, error) {
	return newClient(brokers,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		kgo.MaxBufferedRecords(partitions+1),
	)
}

// produceOneEach writes one record of size bytes to each of topic's
// partitions through cl (see oneEachClient), and waits for every
// acknowledgement.
func produceOneEach(ctx context.Context, cl *kgo.Client, topic string, partitions, size int) error {
	value := make([]byte, size)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for p := range partitions {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("first produce to every partition of %s: %v", topic, firstErr)
	}
	return nil
}

// summarize takes, for each metric, the median and spread of every
// system's successful rounds, and the ratio of gokafka's median to the
// peer's.
func summarize(rounds []roundResult, systems []string) []summaryRow {
	var rows []summaryRow
	index := map[string]int{}
	vals := map[string]map[string][]float64{} // metric → system → values
	for _, rr := range rounds {
		for _, m := range rr.Metrics {
			if _, ok := index[m.Name]; !ok {
				index[m.Name] = len(rows)
				rows = append(rows, summaryRow{Metric: m.Name, Unit: m.Unit, Higher: m.Higher})
				vals[m.Name] = map[string][]float64{}
			}
			if !math.IsNaN(m.Value) {
				vals[m.Name][rr.System] = append(vals[m.Name][rr.System], m.Value)
			}
		}
	}
	for i := range rows {
		row := &rows[i]
		row.Median = map[string]float64{}
		row.Spread = map[string]spread{}
		for _, s := range systems {
			row.Median[s] = median(vals[row.Metric][s])
			row.Spread[s] = spreadOf(vals[row.Metric][s])
		}
		row.Ratio = math.NaN()
		if len(systems) > 1 {
			row.Ratio = ratio(row.Median[systems[0]], row.Median[systems[1]])
		}
	}
	return rows
}

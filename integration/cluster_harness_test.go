package integration

// A three-node cluster for the tests in cluster_test.go: every node is a
// broker and a voter of the metadata quorum, started from the same binary as
// the single-broker tests, each with its own ports and data directory.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/gokafkatest"
)

// clusterDefaults keep failure detection fast enough for tests: a broker
// that stops heartbeating is fenced after 3 s instead of 9 s, a follower
// that stops fetching leaves the ISR after 5 s instead of 30 s, and a
// follower whose leader vanished retries after 200 ms instead of 1 s, and
// consumer-protocol (KIP-848) members heartbeat every 500 ms instead of 5 s
// so that their rebalances take round trips, not seconds.
// shutdown.timeout.ms bounds the controlled shutdown of the last node of a
// stopping cluster, which waits for a quorum that is already gone (half the
// timeout) before it closes its logs.
var clusterDefaults = map[string]string{
	"GOKAFKA_DEFAULT_REPLICATION_FACTOR":           "3",
	"GOKAFKA_MIN_INSYNC_REPLICAS":                  "2",
	"GOKAFKA_BROKER_SESSION_TIMEOUT_MS":            "3000",
	"GOKAFKA_BROKER_HEARTBEAT_INTERVAL_MS":         "500",
	"GOKAFKA_REPLICA_LAG_TIME_MAX_MS":              "5000",
	"GOKAFKA_REPLICA_FETCH_BACKOFF_MS":             "200",
	"GOKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":     "0",
	"GOKAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "500",
	"GOKAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":         "3",
	"GOKAFKA_SHUTDOWN_TIMEOUT_MS":                  "8000",
}

type cluster struct {
	t     testing.TB
	nodes []*broker // nodes[i] has node id i+1

	// probes talk to exactly one node each (their only seed), so a test
	// can ask a given node what it believes, and avoid a paused one.
	probes []*kgo.Client

	mu     sync.Mutex
	paused map[int32]bool

	// clientOpts are added to every client of the cluster's (the probes
	// included): TLS for a cluster whose listeners are SSL.
	clientOpts []kgo.Opt
	// emb, when set, is a cluster embedded in the test process
	// (gokafkatest) instead of processes: nodes is empty and the checks
	// below reach the nodes through emb.
	emb *gokafkatest.Cluster

	// voters is the nodes' controller.quorum.voters (roles_test.go adds
	// nodes with it); controllerOnly marks nodes that are not brokers,
	// which clients and the checks below leave out.
	voters         string
	controllerOnly map[int32]bool
}

// size is the number of nodes.
func (c *cluster) size() int {
	if c.emb != nil {
		return len(c.emb.NodeIDs())
	}
	return len(c.nodes)
}

// partitionDir is node id's directory of a partition.
func (c *cluster) partitionDir(id int32, topic string, p int32) string {
	if c.emb != nil {
		return filepath.Join(c.emb.LogDir(id), fmt.Sprintf("%s-%d", topic, p))
	}
	return c.node(id).PartitionDir(topic, p)
}

// clusterOpts configures startClusterWith.
type clusterOpts struct {
	// Env overrides clusterDefaults for every node.
	Env map[string]string
	// NodeEnv adds settings for node id (1-based).
	NodeEnv func(id int) map[string]string
	// Listeners returns a node's listeners setting from its broker and
	// controller ports; nil is PLAINTEXT and CONTROLLER.
	Listeners func(port, ctrl int) string
	// ClientOpts are added to every client of the cluster.
	ClientOpts []kgo.Opt
	// Nodes is how many nodes, every one a voter; 0 is 3.
	Nodes int
	// Args are every node's command arguments (--config <file>).
	Args []string
}

// startCluster launches three nodes together (none accepts connections
// before the quorum has a leader, so they cannot be started one by one),
// waits until each accepts connections and until every node sees all three
// brokers registered and unfenced. env overrides clusterDefaults.
func startCluster(t testing.TB, env map[string]string) *cluster {
	t.Helper()
	return startClusterWith(t, clusterOpts{Env: env})
}

// startClusterN is startCluster with n nodes, every one a voter.
func startClusterN(t testing.TB, n int, env map[string]string) *cluster {
	t.Helper()
	return startClusterWith(t, clusterOpts{Env: env, Nodes: n})
}

// startClusterWith is startCluster with listeners, per-node settings,
// client options and a node count (default 3) of the test's choosing.
func startClusterWith(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	env := o.Env
	n := o.Nodes
	if n == 0 {
		n = 3
	}
	ports := make([]int, n)
	ctrl := make([]int, n)
	var voters []string
	for i := range n {
		ports[i], ctrl[i] = freePort(t), freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
	}
	c := &cluster{t: t, paused: map[int32]bool{}, clientOpts: o.ClientOpts, voters: strings.Join(voters, ",")}
	for i := range n {
		settings := map[string]string{}
		for k, v := range clusterDefaults {
			settings[k] = v
		}
		for k, v := range env {
			settings[k] = v
		}
		settings["GOKAFKA_NODE_ID"] = strconv.Itoa(i + 1)
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], ctrl[i])
		if o.Listeners != nil {
			settings["GOKAFKA_LISTENERS"] = o.Listeners(ports[i], ctrl[i])
		}
		if o.NodeEnv != nil {
			maps.Copy(settings, o.NodeEnv(i+1))
		}
		settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = strings.Join(voters, ",")
		c.nodes = append(c.nodes, newBroker(t, brokerOpts{Port: ports[i], Env: settings, Args: o.Args}))
	}
	c.boot(t)
	return c
}

// boot starts every node, waits until each serves, opens a probe client
// per node and waits until every node lists every broker as live.
func (c *cluster) boot(t testing.TB) {
	t.Helper()
	for _, b := range c.nodes {
		b.launch()
	}
	for _, b := range c.nodes {
		b.waitReady()
	}
	for _, b := range c.nodes {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ClientID("gokafka-integration-probe")}, c.clientOpts...)...)
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		t.Cleanup(cl.Close)
		c.probes = append(c.probes, cl)
	}
	n := len(c.nodes)
	eventually(t, 60*time.Second, func() error {
		for id := int32(1); id <= int32(n); id++ {
			brokers, err := c.liveBrokers(id)
			if err != nil {
				return err
			}
			if len(brokers) != n {
				return fmt.Errorf("node %d lists brokers %v", id, brokers)
			}
		}
		return nil
	})
}

// node returns the broker with node id id (1-based).
func (c *cluster) node(id int32) *broker { return c.nodes[id-1] }

func (c *cluster) addrs() []string {
	if c.emb != nil {
		return c.emb.Seeds()
	}
	var out []string
	for i, b := range c.nodes {
		if !c.controllerOnly[int32(i+1)] {
			out = append(out, b.Addr())
		}
	}
	return out
}

// client is broker.client seeded with every node, so it bootstraps while
// any one of them is up.
func (c *cluster) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return kgoClient(t, append(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, c.clientOpts...), opts...)...)
}

func (c *cluster) admin(t testing.TB) *kadm.Client {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	adm.SetTimeoutMillis(15000)
	return adm
}

// createTopic creates a topic with replication factor 3 and waits until
// every live node reports a leader and a full ISR for each partition.
func (c *cluster) createTopic(t testing.TB, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	resp, err := c.admin(t).CreateTopic(ctx, partitions, 3, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopics %q (partitions %d, RF 3, configs %v): %v (%s)", topic, partitions, showConfigs(configs), err, resp.ErrMessage)
	}
	for p := range partitions {
		c.waitPartition(t, topic, p, "a leader and a full ISR", func(s partState) bool {
			return s.Leader > 0 && len(s.ISR) == 3
		})
	}
}

// createTopicAssigned creates a topic whose partition i has the replicas
// assignment[i], the first of them its initial leader, and waits as
// createTopic does.
func (c *cluster) createTopicAssigned(t testing.TB, topic string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = int32(i)
		a.Replicas = replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 30*time.Second), c.client(t))
	if err != nil {
		t.Fatalf("CreateTopics %q with assignment %v: %v", topic, assignment, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("CreateTopics %q with assignment %v: %v", topic, assignment, err)
	}
	for p, replicas := range assignment {
		c.waitPartition(t, topic, int32(p), "a leader and a full ISR", func(s partState) bool {
			return s.Leader > 0 && len(s.ISR) == len(replicas)
		})
	}
}

// controller returns the active controller (the quorum's leader) as node
// id sees it.
func (c *cluster) controller(id int32) (int32, error) {
	resp, err := c.metadataFrom(id, "")
	if err != nil {
		return -1, err
	}
	return resp.ControllerID, nil
}

// partState is one node's view of a partition.
type partState struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
}

func (s partState) String() string {
	return fmt.Sprintf("leader %d (epoch %d) ISR %v", s.Leader, s.LeaderEpoch, s.ISR)
}

func (s partState) inISR(id int32) bool { return slices.Contains(s.ISR, id) }

// metadataFrom asks node id for the metadata of topic (all topics if
// empty), with a short timeout so a dead or paused node does not stall the
// caller.
func (c *cluster) metadataFrom(id int32, topic string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	seeds := c.probes[id-1].SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("node %d: probe client has no seed broker", id)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: metadata: %w", id, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// liveBrokers lists the brokers node id advertises (the unfenced ones).
func (c *cluster) liveBrokers(id int32) ([]int32, error) {
	resp, err := c.metadataFrom(id, "")
	if err != nil {
		return nil, err
	}
	var out []int32
	for _, b := range resp.Brokers {
		out = append(out, b.NodeID)
	}
	slices.Sort(out)
	return out, nil
}

// partitionFrom returns node id's view of one partition.
func (c *cluster) partitionFrom(id int32, topic string, p int32) (partState, error) {
	resp, err := c.metadataFrom(id, topic)
	if err != nil {
		return partState{}, err
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return partState{}, fmt.Errorf("node %d: topic %s: %w", id, topic, err)
		}
		for _, mp := range mt.Partitions {
			if mp.Partition != p {
				continue
			}
			isr := slices.Clone(mp.ISR)
			slices.Sort(isr)
			s := partState{Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch, ISR: isr}
			if err := kerr.ErrorForCode(mp.ErrorCode); err != nil && !errors.Is(err, kerr.LeaderNotAvailable) {
				return s, fmt.Errorf("node %d: %s[%d]: %w", id, topic, p, err)
			}
			return s, nil
		}
	}
	return partState{}, fmt.Errorf("node %d: %s[%d] not in metadata", id, topic, p)
}

// reachable lists the nodes whose process runs and is not paused.
func (c *cluster) reachable() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int32
	if c.emb != nil {
		for _, id := range c.emb.NodeIDs() {
			if c.emb.Server(id) != nil && !c.paused[id] {
				out = append(out, id)
			}
		}
		return out
	}
	for i, b := range c.nodes {
		id := int32(i + 1)
		if b.Running() && !c.paused[id] && !c.controllerOnly[id] {
			out = append(out, id)
		}
	}
	return out
}

// partition returns the view of the first reachable node that answers.
func (c *cluster) partition(topic string, p int32) (partState, error) {
	var errs []error
	for _, id := range c.reachable() {
		s, err := c.partitionFrom(id, topic, p)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return partState{}, fmt.Errorf("no reachable node answered: %w", errors.Join(errs...))
}

// waitPartition waits until every reachable node's view of the partition
// satisfies cond, and returns the view of the last node asked. Requiring
// all of them keeps a client that happens to ask a lagging node from
// seeing an older state than the test assumes.
func (c *cluster) waitPartition(t testing.TB, topic string, p int32, what string, cond func(partState) bool) partState {
	t.Helper()
	return c.waitPartitionAsking(t, 60*time.Second, c.reachable, topic, p, what, cond)
}

// waitPartitionAsking waits until every node nodes() names sees the
// partition satisfy cond, and returns the view of the last node asked.
func (c *cluster) waitPartitionAsking(t testing.TB, timeout time.Duration, nodes func() []int32, topic string, p int32, what string, cond func(partState) bool) partState {
	t.Helper()
	var got partState
	err := poll(timeout, func() error {
		ids := nodes()
		if len(ids) == 0 {
			return errors.New("no reachable node")
		}
		for _, id := range ids {
			s, err := c.partitionFrom(id, topic, p)
			if err != nil {
				return err
			}
			if !cond(s) {
				return fmt.Errorf("node %d sees %s", id, s)
			}
			got = s
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s[%d]: waiting for %s: %v", topic, p, what, err)
	}
	return got
}

// leader returns the current leader of a partition (waiting for one).
func (c *cluster) leader(t testing.TB, topic string, p int32) partState {
	t.Helper()
	return c.waitPartition(t, topic, p, "a leader", func(s partState) bool { return s.Leader > 0 })
}

// waitFullISR waits until the partition has a leader and all three
// replicas are in sync again, e.g. after a restart.
func (c *cluster) waitFullISR(t testing.TB, topic string, p int32) partState {
	t.Helper()
	return c.waitPartition(t, topic, p, "a full ISR", func(s partState) bool {
		return s.Leader > 0 && len(s.ISR) == 3
	})
}

// waitNewLeader waits until a node other than old leads the partition.
func (c *cluster) waitNewLeader(t testing.TB, topic string, p int32, old int32) partState {
	t.Helper()
	return c.waitPartition(t, topic, p, fmt.Sprintf("a leader other than node %d", old), func(s partState) bool {
		return s.Leader > 0 && s.Leader != old
	})
}

// pause stops node id with SIGSTOP: it keeps its sockets open but answers
// nothing, like a process stuck in a long GC pause or swapped out. The node
// is continued at the end of the test, before the broker's own cleanup (which
// was registered earlier, so runs later) sends SIGTERM; a stopped process
// would otherwise hold the termination pending until it is killed.
func (c *cluster) pause(t testing.TB, id int32) {
	t.Helper()
	b := c.node(id)
	b.mu.Lock()
	proc := b.cmd.Process
	b.mu.Unlock()
	if err := syscall.Kill(proc.Pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP node %d: %v", id, err)
	}
	c.mu.Lock()
	c.paused[id] = true
	c.mu.Unlock()
	t.Cleanup(func() { c.resume(t, id) })
}

// resume continues a paused node; it is a no-op for one not paused.
func (c *cluster) resume(t testing.TB, id int32) {
	t.Helper()
	c.mu.Lock()
	was := c.paused[id]
	delete(c.paused, id)
	c.mu.Unlock()
	b := c.node(id)
	if !was || !b.Running() {
		return
	}
	b.mu.Lock()
	proc := b.cmd.Process
	b.mu.Unlock()
	if err := syscall.Kill(proc.Pid, syscall.SIGCONT); err != nil {
		t.Errorf("SIGCONT node %d: %v", id, err)
	}
}

// stopAll stops every running node with SIGTERM, one after another, and
// requires each to exit cleanly. The last one cannot complete its
// controlled shutdown (the quorum left with the others) and waits out half
// of shutdown.timeout.ms before it closes its logs.
func (c *cluster) stopAll(t testing.TB) {
	t.Helper()
	for id := int32(1); id <= int32(len(c.nodes)); id++ {
		c.resume(t, id)
		if c.node(id).Running() {
			c.node(id).Stop()
		}
	}
}

// ---------------------------------------------------------------------------
// A producer writing sequence-numbered records until told to stop.

type seqAck struct {
	partition int32
	offset    int64
}

// seqProducer produces records whose values are seqValue(seq), seq counting
// up from 0, to partition seq % partitions, at a steady pace (a producer
// flat out would starve three brokers of CPU on two cores, delaying
// heartbeats and fetches until brokers get fenced and followers drop out
// of the ISR for reasons unrelated to the test). It records every
// acknowledgement and every failure.
type seqProducer struct {
	t          testing.TB
	cl         *kgo.Client
	topic      string
	partitions int32

	cancel    context.CancelFunc
	loopDone  chan struct{}
	callbacks sync.WaitGroup

	mu       sync.Mutex
	acked    map[uint64]seqAck
	failed   map[uint64]error
	produced uint64 // sequence numbers [0, produced) were handed to Produce

	nAcked atomic.Int64
}

// startSeqProducer starts writing with cl, about perTick records every
// 10 ms. cl must use kgo.ManualPartitioner.
func startSeqProducer(t testing.TB, cl *kgo.Client, topic string, partitions int32, perTick int) *seqProducer {
	return startSeqProducerFrom(t, cl, topic, partitions, perTick, 0)
}

// startSeqProducerFrom is startSeqProducer counting from sequence number
// first; perTick 0 produces flat out, as fast as the buffer drains.
func startSeqProducerFrom(t testing.TB, cl *kgo.Client, topic string, partitions int32, perTick int, first uint64) *seqProducer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &seqProducer{
		t: t, cl: cl, topic: topic, partitions: partitions,
		cancel: cancel, loopDone: make(chan struct{}),
		acked: map[uint64]seqAck{}, failed: map[uint64]error{}, produced: first,
	}
	go p.loop(ctx, perTick, first)
	// On an early exit the loop may be blocked in Produce on a full
	// buffer; closing the client fails what is buffered and unblocks it.
	t.Cleanup(func() { p.cancel(); cl.Close(); <-p.loopDone })
	return p
}

func (p *seqProducer) loop(ctx context.Context, perTick int, first uint64) {
	defer close(p.loopDone)
	var tick <-chan time.Time
	if perTick > 0 {
		ticker := time.NewTicker(10 * time.Millisecond)
		defer ticker.Stop()
		tick = ticker.C
	}
	seq := first
	for {
		if tick == nil && ctx.Err() != nil {
			return
		}
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
		for range max(perTick, 1) {
			s := seq
			r := &kgo.Record{Topic: p.topic, Partition: int32(s % uint64(p.partitions)), Value: seqValue(s)}
			p.callbacks.Add(1)
			p.mu.Lock()
			p.produced = s + 1
			p.mu.Unlock()
			// Produce blocks while MaxBufferedRecords are buffered, which
			// is what throttles the loop while no broker accepts writes.
			// The records do not get ctx: kgo fails a buffered record
			// whose context ends, and stop wants them all delivered.
			p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				defer p.callbacks.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.failed[s] = err
					return
				}
				p.acked[s] = seqAck{r.Partition, r.Offset}
				p.nAcked.Add(1)
			})
			seq++
		}
	}
}

// waitMoreAcks waits until n more records than now were acknowledged: the
// producer makes progress.
func (p *seqProducer) waitMoreAcks(t testing.TB, n int64, what string) {
	t.Helper()
	target := p.nAcked.Load() + n
	err := poll(90*time.Second, func() error {
		if got := p.nAcked.Load(); got < target {
			return fmt.Errorf("%d acknowledged, waiting for %d", got, target)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("producer stalled %s: %v (failures so far: %s)", what, err, p.failureSummary())
	}
}

// stop ends the loop and waits for every buffered record's outcome: Flush
// lets the retries run out rather than failing what is still buffered.
func (p *seqProducer) stop(t testing.TB) {
	t.Helper()
	p.cancel()
	select {
	case <-p.loopDone:
	case <-time.After(90 * time.Second):
		t.Fatalf("producer loop still blocked on a full buffer 90s after being stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Errorf("flushing the producer: %v", err)
	}
	waited := make(chan struct{})
	go func() { p.callbacks.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("produce callbacks still outstanding 30s after the flush")
	}
}

// abandon ends the loop and closes the client, which fails whatever is
// still buffered or in flight (the broker may be dead), and waits until
// every callback has run.
func (p *seqProducer) abandon(t testing.TB) {
	t.Helper()
	p.cancel()
	p.cl.Close()
	<-p.loopDone
	waited := make(chan struct{})
	go func() { p.callbacks.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("produce callbacks still outstanding a minute after closing the producer")
	}
}

// next returns the first sequence number not handed to Produce.
func (p *seqProducer) next() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produced
}

// ackedCopy returns the acknowledgements so far.
func (p *seqProducer) ackedCopy() map[uint64]seqAck {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.acked)
}

func (p *seqProducer) failureSummary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failed) == 0 {
		return "none"
	}
	seqs := make([]uint64, 0, len(p.failed))
	for s := range p.failed {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	return fmt.Sprintf("%d failed, first seq %d: %v", len(seqs), seqs[0], p.failed[seqs[0]])
}

// ---------------------------------------------------------------------------
// Reading everything back.

// seqRecord is a consumed record of a seqProducer.
type seqRecord struct {
	seq       uint64
	partition int32
	offset    int64
}

// consumeAll reads every partition of topic from its start up to its
// current end offset (the high watermark) through c.
func (c *cluster) consumeAll(t testing.TB, topic string, partitions int32) []rec {
	t.Helper()
	adm := c.admin(t)
	var ends map[int32]int64
	eventually(t, time.Minute, func() error {
		var err error
		ends, err = tryListed(topic, endOffsetsFn(adm, topic))
		return err
	})
	total := 0
	offs := map[int32]kgo.Offset{}
	for p := range partitions {
		total += int(ends[p])
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := c.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	defer cl.Close()
	return pollN(t, cl, total, 90*time.Second)
}

// seqRecords decodes consumed seqProducer records, checking that offsets
// in each partition are contiguous from 0 and that each record sits in the
// partition its sequence number was produced to.
func seqRecords(t testing.TB, got []rec, partitions int32) []seqRecord {
	t.Helper()
	next := map[int32]int64{}
	out := make([]seqRecord, 0, len(got))
	for _, r := range got {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d follows %d; offsets must be contiguous", r.Partition, r.Offset, next[r.Partition]-1)
		}
		next[r.Partition]++
		if len(r.Value) < 8 {
			t.Fatalf("partition %d offset %d: value %q is not one we produced", r.Partition, r.Offset, r.Value)
		}
		s := binary.BigEndian.Uint64(r.Value)
		if int32(s%uint64(partitions)) != r.Partition {
			t.Errorf("seq %d found in partition %d, produced to %d", s, r.Partition, s%uint64(partitions))
		}
		out = append(out, seqRecord{s, r.Partition, r.Offset})
	}
	return out
}

// checkAckedPresent requires every acknowledged record at the offset it
// was acknowledged with.
func checkAckedPresent(t testing.TB, p *seqProducer, got []seqRecord) {
	t.Helper()
	checkAcked(t, p.ackedCopy(), got)
}

// checkAcked requires every record in acked at the offset it was
// acknowledged with.
func checkAcked(t testing.TB, acked map[uint64]seqAck, got []seqRecord) {
	t.Helper()
	at := map[uint64]seqAck{}
	for _, r := range got {
		at[r.seq] = seqAck{r.partition, r.offset}
	}
	var lost []uint64
	for s, a := range acked {
		f, ok := at[s]
		if !ok {
			lost = append(lost, s)
			continue
		}
		if f != a {
			t.Errorf("seq %d acknowledged at p%d@%d but found at p%d@%d", s, a.partition, a.offset, f.partition, f.offset)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		t.Errorf("%d of %d acknowledged records lost; first seqs %v (first acknowledged at p%d@%d)",
			len(lost), len(acked), lost[:min(10, len(lost))], acked[lost[0]].partition, acked[lost[0]].offset)
	}
}

// ---------------------------------------------------------------------------
// Comparing replicas on disk.

// hwCheckpoint reads a node's replication-offset-checkpoint (the high
// watermarks it wrote at shutdown): "0\n<count>\n<topic> <partition> <hw>\n...".
func hwCheckpoint(t testing.TB, b *broker) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.DataDir(), "replication-offset-checkpoint"))
	if err != nil {
		t.Fatalf("reading the HW checkpoint: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		t.Fatalf("HW checkpoint of %s is malformed: %q", b.DataDir(), data)
	}
	out := map[string]int64{}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("HW checkpoint line %q is malformed", l)
		}
		hw, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("HW checkpoint line %q: %v", l, err)
		}
		out[f[0]+"-"+f[1]] = hw
	}
	return out
}

// storedBatch is one record batch as it lies in a segment file.
type storedBatch struct {
	base, last int64
	raw        []byte
}

// batchesBelow reads a partition directory's segments in offset order and
// returns the batches that end below hw, as stored. It walks the v2 batch
// headers: baseOffset int64, batchLength int32 (bytes after the length), and
// lastOffsetDelta at byte 23.
func batchesBelow(t testing.TB, dir string, hw int64) []storedBatch {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs) // 20-digit zero-padded base offsets sort as numbers
	var out []storedBatch
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatalf("reading %s: %v", seg, err)
		}
		for pos := 0; pos+61 <= len(data); {
			base := int64(binary.BigEndian.Uint64(data[pos:]))
			size := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
			if size < 61 || pos+size > len(data) {
				break // a torn tail past what was flushed; the HW is below it
			}
			last := base + int64(int32(binary.BigEndian.Uint32(data[pos+23:])))
			if last >= hw {
				return out
			}
			out = append(out, storedBatch{base, last, data[pos : pos+size]})
			pos += size
		}
	}
	return out
}

// compareReplicaLogs requires the three nodes' logs of topic-partition to
// hold the same batches, byte for byte, from offset 0 up to hw, with nothing
// missing.
func compareReplicaLogs(t testing.TB, c *cluster, topic string, p int32, hw int64) {
	t.Helper()
	var ids []int32
	for id := range int32(c.size()) {
		ids = append(ids, id+1)
	}
	compareReplicasOn(t, c, ids, topic, p, hw)
}

// compareReplicasOn is compareReplicaLogs on the nodes ids.
func compareReplicasOn(t testing.TB, c *cluster, ids []int32, topic string, p int32, hw int64) {
	t.Helper()
	var ref []storedBatch
	for i, id := range ids {
		bs := batchesBelow(t, c.partitionDir(id, topic, p), hw)
		next := int64(0)
		for _, x := range bs {
			if x.base != next {
				t.Errorf("node %d %s[%d]: batch at %d follows one ending at %d", id, topic, p, x.base, next-1)
				return
			}
			next = x.last + 1
		}
		if next != hw {
			t.Errorf("node %d %s[%d]: log reaches %d below the HW %d", id, topic, p, next, hw)
			return
		}
		if i == 0 {
			ref = bs
			continue
		}
		if len(bs) != len(ref) {
			t.Errorf("%s[%d]: node %d has %d batches below the HW %d, node %d has %d", topic, p, id, len(bs), hw, ids[0], len(ref))
			return
		}
		for j := range bs {
			if !bytes.Equal(bs[j].raw, ref[j].raw) {
				t.Errorf("%s[%d]: batch at offset %d differs between node %d (%d bytes, leader epoch %d) and node %d (%d bytes, leader epoch %d)",
					topic, p, ref[j].base, ids[0], len(ref[j].raw), int32(binary.BigEndian.Uint32(ref[j].raw[12:])),
					id, len(bs[j].raw), int32(binary.BigEndian.Uint32(bs[j].raw[12:])))
				return
			}
		}
	}
	t.Logf("%s[%d]: %d batches below the HW %d identical on all nodes", topic, p, len(ref), hw)
}

package gokafkatest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/internal/faultnet"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/quota"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/share"
	"github.com/gokafka/gokafka/txn"
)

// Option configures NewCluster.
type Option func(*options)

type options struct {
	nodes      int
	props      map[string]string
	configure  []func(id int32, cfg *broker.Config)
	logger     *zerolog.Logger
	logLevel   zerolog.Level
	waitFor    time.Duration
	electionTO time.Duration
}

// Nodes sets the number of nodes (default 1). Every node is a broker and a
// metadata quorum voter.
func Nodes(n int) Option { return func(o *options) { o.nodes = n } }

// BrokerProperty sets a broker property that topics inherit their configs
// from, by Kafka's name (min.insync.replicas, log.retention.ms,
// unclean.leader.election.enable, …): the value DescribeConfigs reports as
// the static broker config. Other settings are fields of broker.Config;
// set them with Configure.
func BrokerProperty(name, value string) Option {
	return func(o *options) { o.props[name] = value }
}

// Configure edits each node's broker.Config before the node starts (and
// again before each restart). The listeners, log dirs, node id, quorum
// voters and peer routes are the cluster's; leave them alone.
func Configure(fn func(id int32, cfg *broker.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, fn) }
}

// Logger sends every node's log to l (with a node field) instead of the
// test's log.
func Logger(l zerolog.Logger) Option { return func(o *options) { o.logger = &l } }

// LogLevel sets the level of the nodes' logs written to the test's log
// (default warn; GOKAFKATEST_LOG_LEVEL overrides it).
func LogLevel(l zerolog.Level) Option { return func(o *options) { o.logLevel = l } }

// WaitTimeout bounds every wait of the cluster's methods (default 60s).
func WaitTimeout(d time.Duration) Option { return func(o *options) { o.waitFor = d } }

// Cluster is a running cluster of nodes 1..n in the test process.
type Cluster struct {
	t    testing.TB
	opts options
	net  *faultnet.Net
	// nodes[i] is node i+1.
	nodes  []*Node
	voters []cluster.Voter
	logw   *testLogWriter
}

// Node is one node of a Cluster.
type Node struct {
	c  *Cluster
	id int32
	// dir is the node's log dir, kept across restarts.
	dir string
	// ctrlAddr is the CONTROLLER listener, bound again at every start
	// (the quorum knows the voters by it).
	ctrlAddr string
	// brokerPort is the broker listener's last port, tried again first
	// at a restart.
	brokerPort int
	// clientProxy fronts the broker listener for clients; its address
	// is the one the node advertises. peerProxies[to] carries this node's
	// connections to node to's broker listener, quorumProxies[to] to its
	// CONTROLLER listener.
	clientProxy   *faultnet.Proxy
	peerProxies   map[int32]*faultnet.Proxy
	quorumProxies map[int32]*faultnet.Proxy
	// inbound are the proxies other nodes reach this node's broker
	// listener through (their targets follow its port).
	inbound []*faultnet.Proxy

	mu     sync.Mutex
	srv    *broker.Server
	fs     *killableFS
	paused bool
}

// NewCluster starts a cluster and returns once every node is registered
// and unfenced. t.Cleanup stops it and removes its data.
func NewCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := options{nodes: 1, props: map[string]string{}, logLevel: zerolog.WarnLevel, waitFor: 60 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if lv := os.Getenv("GOKAFKATEST_LOG_LEVEL"); lv != "" {
		if l, err := zerolog.ParseLevel(lv); err == nil {
			o.logLevel = l
		}
	}
	if o.nodes < 1 {
		t.Fatalf("gokafkatest: %d nodes", o.nodes)
	}
	n := int32(o.nodes)
	c := &Cluster{t: t, opts: o, net: faultnet.New(n, t.Logf), logw: &testLogWriter{t: t}}
	t.Cleanup(c.close)

	for id := int32(1); id <= n; id++ {
		nd := &Node{c: c, id: id, dir: t.TempDir(), peerProxies: map[int32]*faultnet.Proxy{}, quorumProxies: map[int32]*faultnet.Proxy{}}
		if n > 1 {
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			nd.ctrlAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			c.voters = append(c.voters, cluster.Voter{ID: id, Addr: nd.ctrlAddr})
		}
		p, err := c.net.Proxy(0, id, faultnet.Client, "")
		if err != nil {
			t.Fatal(err)
		}
		nd.clientProxy = p
		c.nodes = append(c.nodes, nd)
	}
	for _, from := range c.nodes {
		for _, to := range c.nodes {
			if from == to {
				continue
			}
			bp, err := c.net.Proxy(from.id, to.id, faultnet.Broker, "")
			if err != nil {
				t.Fatal(err)
			}
			qp, err := c.net.Proxy(from.id, to.id, faultnet.Quorum, to.ctrlAddr)
			if err != nil {
				t.Fatal(err)
			}
			from.peerProxies[to.id], from.quorumProxies[to.id] = bp, qp
			to.inbound = append(to.inbound, bp)
		}
	}

	// The nodes start together: each one's start waits for the quorum.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = nd.start()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("gokafkatest: start: %v", err)
	}
	c.waitBrokers(c.nodes...)
	return c
}

// Seeds returns the addresses clients bootstrap from, one per node.
func (c *Cluster) Seeds() []string {
	out := make([]string, 0, len(c.nodes))
	for _, nd := range c.nodes {
		out = append(out, nd.clientProxy.Addr())
	}
	return out
}

// Addr returns the client address of node id (the one it advertises).
func (c *Cluster) Addr(id int32) string { return c.node(id).clientProxy.Addr() }

// NodeIDs returns the node ids, 1..n.
func (c *Cluster) NodeIDs() []int32 { return c.net.IDs() }

// Server returns node id's running broker, nil while it is stopped.
func (c *Cluster) Server(id int32) *broker.Server {
	nd := c.node(id)
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.srv
}

func (c *Cluster) node(id int32) *Node {
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("gokafkatest: no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// config returns node nd's broker configuration: Kafka's defaults, with
// failure detection fast enough for tests (a silent broker is fenced after
// 3 s, a follower that stops fetching leaves the ISR after 5 s, the
// metadata quorum elects a leader after 250-500 ms instead of 500-1000 ms)
// and consumer groups that start at once.
func (c *Cluster) config(nd *Node) broker.Config {
	n := len(c.nodes)
	routes := protocol.PeerRoutes{}
	for _, to := range c.nodes {
		if to != nd {
			routes[to.clientProxy.Addr()] = nd.peerProxies[to.id].Addr()
			routes[to.ctrlAddr] = nd.quorumProxies[to.id].Addr()
		}
	}
	listeners := []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", nd.brokerPort)}
	if n > 1 {
		listeners = append(listeners, "CONTROLLER://"+nd.ctrlAddr)
	}
	values := map[string]string{}
	set := map[string]bool{}
	rf := min(n, 3)
	values["default.replication.factor"] = strconv.Itoa(rf)
	for k, v := range c.opts.props {
		values[k], set[k] = v, true
	}
	groups := group.DefaultConfig()
	groups.InitialRebalanceDelay = 0
	groups.OffsetsTopicNumPartitions = 3
	groups.OffsetsTopicReplicationFactor = int16(rf)
	groups.ConsumerHeartbeatInterval = 500 * time.Millisecond
	tx := txn.DefaultConfig()
	tx.NumPartitions = 3
	tx.ReplicationFactor = int16(rf)
	tx.MinISR = int32(min(rf, 2))
	rc := replication.DefaultConfig()
	rc.ReplicaLagTimeMax = 5 * time.Second
	rc.ReplicaFetchBackoff = 200 * time.Millisecond
	cfg := broker.Config{
		NodeID:                   nd.id,
		Listeners:                listeners,
		AdvertisedListeners:      []string{"PLAINTEXT://" + nd.clientProxy.Addr()},
		LogDirs:                  []string{nd.dir},
		NumPartitions:            1,
		DefaultReplicationFactor: int16(rf),
		AutoCreateTopics:         true,
		DeleteTopicEnable:        true,
		FetchMaxBytes:            57671680,
		Quorum: cluster.QuorumConfig{
			Voters:            c.voters,
			HeartbeatInterval: 500 * time.Millisecond,
			SessionTimeout:    3 * time.Second,
			ElectionTimeout:   250 * time.Millisecond,
		},
		ControllerListenerNames: []string{"CONTROLLER"},
		Protocol:                protocol.DefaultConfig(),
		Logs: partition.ManagerConfig{
			RetentionCheckInterval: 5 * time.Minute,
			CheckpointInterval:     time.Minute,
			FlushSchedulerInterval: time.Second,
			Defaults:               partition.DefaultConfig(),
		},
		Groups:          groups,
		Txn:             tx,
		Share:           share.DefaultConfig(),
		Replication:     rc,
		BrokerDefaults:  cluster.BrokerDefaults{Values: values, Set: set},
		ShutdownTimeout: 8 * time.Second,
		Quota:           quota.DefaultConfig(),
		PeerRoutes:      routes,
	}
	for _, fn := range c.opts.configure {
		fn(nd.id, &cfg)
	}
	return cfg
}

func (c *Cluster) logger(id int32) zerolog.Logger {
	if c.opts.logger != nil {
		return c.opts.logger.With().Int32("node", id).Logger()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: c.logw, NoColor: true, TimeFormat: "15:04:05.000"}).
		Level(c.opts.logLevel).With().Timestamp().Int32("node", id).Logger()
}

// start starts the node on its ports and data and points the proxies in
// front of its broker listener at it.
func (nd *Node) start() error {
	c := nd.c
	cfg := c.config(nd)
	fs := &killableFS{}
	base := cfg.LogFS
	if base == nil {
		base = partition.OSFS()
	}
	cfg.LogFS = fs.wrap(base)
	srv, err := broker.Start(context.Background(), cfg, c.logger(nd.id))
	if err != nil && nd.brokerPort != 0 && errors.Is(err, syscall.EADDRINUSE) && strings.Contains(err.Error(), "listen PLAINTEXT") {
		// The broker port was taken meanwhile; clients and peers reach
		// the node through its proxies, so any port will do.
		nd.brokerPort = 0
		cfg.Listeners[0] = "PLAINTEXT://127.0.0.1:0"
		srv, err = broker.Start(context.Background(), cfg, c.logger(nd.id))
	}
	if err != nil {
		return fmt.Errorf("node %d: %w", nd.id, err)
	}
	addr := srv.Addrs()[0]
	_, port, _ := net.SplitHostPort(addr)
	nd.brokerPort, _ = strconv.Atoi(port)
	nd.clientProxy.SetTarget(addr)
	for _, p := range nd.inbound {
		p.SetTarget(addr)
	}
	nd.mu.Lock()
	nd.srv, nd.fs = srv, fs
	nd.mu.Unlock()
	return nil
}

// running returns the node's server, or nil.
func (nd *Node) running() *broker.Server {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.srv
}

// take removes the node's server, for a stop.
func (nd *Node) take() (*broker.Server, *killableFS) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	srv, fs := nd.srv, nd.fs
	nd.srv, nd.fs = nil, nil
	return srv, fs
}

// Stop shuts node id down cleanly, as SIGTERM does: its leaderships move
// first (controlled shutdown), in-flight requests finish, its logs are
// flushed. A stopped node refuses connections until Restart.
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	srv, _ := c.node(id).take()
	if srv == nil {
		c.t.Fatalf("gokafkatest: node %d is not running", id)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		c.t.Logf("gokafkatest: node %d shutdown: %v", id, err)
	}
}

// Kill stops node id abruptly, as close to kill -9 as one process allows:
// from the moment of the call its data directory takes no further write,
// fsync, rename or checkpoint (what the node wrote before stays, as the
// page cache keeps a killed process's writes), every connection to and
// from it is reset, nothing it sends while it tears down reaches another
// node, and it neither moves its leaderships nor hands over the quorum
// leadership nor records a clean shutdown: the controller fences it when
// its session expires and its next start recovers its logs as after a
// crash. Unlike kill -9, the node's goroutines wind down (their I/O fails)
// rather than vanish, and its metadata log is closed rather than
// abandoned. See broker.Server.Kill.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	srv, fs := c.node(id).take()
	if srv == nil {
		c.t.Fatalf("gokafkatest: node %d is not running", id)
	}
	fs.kill()
	c.net.Mute(id)
	c.net.Sever(id)
	srv.Kill()
	c.net.Unmute(id)
}

// Restart starts node id again on the same ports and data directory, after
// Stop or Kill, and waits until the controller has it registered and
// unfenced.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	nd := c.node(id)
	if nd.running() != nil {
		c.t.Fatalf("gokafkatest: node %d is running; Stop or Kill it first", id)
	}
	if err := nd.start(); err != nil {
		c.t.Fatalf("gokafkatest: restart: %v", err)
	}
	c.waitBrokers(nd)
}

// Pause freezes every byte to and from node id, client and peer traffic
// alike, losing none, until Resume: to the other nodes and to clients the
// node looks like a process stopped with SIGSTOP. Its session expires and
// the controller fences it, its followers' fetches stall (the leaders
// shrink it out of their ISRs), a client waiting on it waits. What differs
// from SIGSTOP: the node's own timers and goroutines keep running inside
// the test process (it may, for instance, shrink the ISRs of partitions it
// leads; nobody hears of it until Resume).
func (c *Cluster) Pause(id int32) {
	c.t.Helper()
	nd := c.node(id)
	nd.mu.Lock()
	nd.paused = true
	nd.mu.Unlock()
	c.net.Freeze(id)
}

// Resume undoes Pause: the held bytes flow, in order.
func (c *Cluster) Resume(id int32) {
	c.t.Helper()
	nd := c.node(id)
	nd.mu.Lock()
	nd.paused = false
	nd.mu.Unlock()
	c.net.Thaw(id)
}

// Partition cuts the network between groups of nodes, replacing earlier
// cuts: nodes in different groups cannot reach each other, a node in no
// group reaches nobody. Clients still reach every node. A cut link drops
// bytes silently, as a firewall dropping packets does.
func (c *Cluster) Partition(groups ...[]int32) { c.net.Split(groups...) }

// Isolate cuts node id from every other node; clients still reach it.
func (c *Cluster) Isolate(id int32) { c.net.Isolate(id) }

// Heal removes every cut made by Partition and Isolate (paused nodes stay
// paused).
func (c *Cluster) Heal() { c.net.Heal() }

// liveNodes are the nodes running and not paused.
func (c *Cluster) liveNodes() []*Node {
	var out []*Node
	for _, nd := range c.nodes {
		nd.mu.Lock()
		if nd.srv != nil && !nd.paused {
			out = append(out, nd)
		}
		nd.mu.Unlock()
	}
	return out
}

// image returns the most recent metadata image (the highest offset) among
// the running nodes.
func (c *Cluster) image() (*cluster.Image, error) {
	live := c.liveNodes()
	if len(live) == 0 {
		return nil, errors.New("no node is running")
	}
	var best *cluster.Image
	for _, nd := range live {
		srv := nd.running()
		if srv == nil {
			continue
		}
		im := srv.Metadata()
		if best == nil || im.Offset > best.Offset {
			best = im
		}
	}
	if best == nil {
		return nil, errors.New("no node is running")
	}
	return best, nil
}

// Metadata returns the most recent metadata image among the running,
// unpaused nodes (topics, partitions with leaders and ISRs, brokers).
func (c *Cluster) Metadata() *cluster.Image {
	c.t.Helper()
	im, err := c.image()
	if err != nil {
		c.t.Fatalf("gokafkatest: %v", err)
	}
	return im
}

// Leader returns the leader of a partition (-1 for none) as the most
// recent metadata says.
func (c *Cluster) Leader(topic string, partition int32) int32 {
	c.t.Helper()
	p := c.Metadata().Partition(topic, partition)
	if p == nil {
		c.t.Fatalf("gokafkatest: no partition %s-%d", topic, partition)
	}
	return p.Leader
}

// MoveLeader makes node to the leader of a partition and waits until every
// live node agrees. gokafka has no ElectLeaders yet; the leadership moves
// as Kafka's controller moves it for a broker in controlled shutdown: the
// current leader is fenced for a moment (broker.Server.MoveLeadershipsAway)
// and the controller elects another ISR member. That moves all of that
// broker's leaderships, takes it out of the ISRs until it catches up again,
// and is repeated until the election lands on to, which must be in the
// partition's ISR. It returns once every live node sees to lead and every
// broker fenced on the way unfenced again (they rejoin the ISRs as they
// catch up; WaitFullISR waits for that).
func (c *Cluster) MoveLeader(topic string, partition, to int32) {
	c.t.Helper()
	c.wait(fmt.Sprintf("leader of %s-%d moved to %d", topic, partition, to), func() error {
		im, err := c.image()
		if err != nil {
			return err
		}
		p := im.Partition(topic, partition)
		if p == nil {
			return fmt.Errorf("no partition %s-%d", topic, partition)
		}
		if p.Leader == to {
			return c.agree(topic, partition, func(q *cluster.PartitionInfo) bool { return q.Leader == to })
		}
		if !slices.Contains(p.ISR, to) {
			return fmt.Errorf("node %d is not in the ISR %v", to, p.ISR)
		}
		if p.Leader < 0 {
			return errors.New("no leader")
		}
		srv := c.node(p.Leader).running()
		if srv == nil {
			return fmt.Errorf("leader %d is not running", p.Leader)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.MoveLeadershipsAway(ctx); err != nil {
			return fmt.Errorf("move leaderships away from %d: %w", p.Leader, err)
		}
		return fmt.Errorf("leadership moving away from %d", p.Leader)
	})
	// The brokers fenced on the way unfence at their next heartbeat.
	c.waitBrokers(c.liveNodes()...)
}

// WaitFullISR waits until every partition of the topics (every topic when
// none is named) has a leader and all its replicas in the ISR, as every
// live node sees it, and every broker is unfenced.
func (c *Cluster) WaitFullISR(topics ...string) {
	c.t.Helper()
	c.wait(fmt.Sprintf("full ISR of %v", topics), func() error {
		for _, nd := range c.liveNodes() {
			srv := nd.running()
			if srv == nil {
				continue
			}
			im := srv.Metadata()
			names := topics
			if len(names) == 0 {
				for name := range im.Topics {
					names = append(names, name)
				}
			}
			for _, name := range names {
				t := im.Topics[name]
				if t == nil {
					return fmt.Errorf("node %d does not know topic %s", nd.id, name)
				}
				for _, p := range t.Partitions {
					if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
						return fmt.Errorf("node %d: %s-%d leader %d ISR %v of replicas %v", nd.id, name, p.Partition, p.Leader, p.ISR, p.Replicas)
					}
				}
			}
			for id, b := range im.Brokers {
				if b.Fenced {
					return fmt.Errorf("node %d: broker %d fenced", nd.id, id)
				}
			}
		}
		return nil
	})
}

// agree checks that every live node's image satisfies cond for a
// partition.
func (c *Cluster) agree(topic string, partition int32, cond func(*cluster.PartitionInfo) bool) error {
	for _, nd := range c.liveNodes() {
		srv := nd.running()
		if srv == nil {
			continue
		}
		p := srv.Metadata().Partition(topic, partition)
		if p == nil || !cond(p) {
			return fmt.Errorf("node %d has not caught up (%+v)", nd.id, p)
		}
	}
	return nil
}

// waitBrokers waits until the nodes are registered with their current run
// and unfenced, as every live node sees it.
func (c *Cluster) waitBrokers(nds ...*Node) {
	c.t.Helper()
	c.wait("brokers registered and unfenced", func() error {
		for _, nd := range nds {
			srv := nd.running()
			if srv == nil {
				return fmt.Errorf("node %d is not running", nd.id)
			}
			own, ok := srv.Metadata().Brokers[nd.id]
			if !ok || own.Fenced {
				return fmt.Errorf("node %d not yet unfenced in its own metadata", nd.id)
			}
			for _, other := range c.liveNodes() {
				o := other.running()
				if o == nil {
					continue
				}
				b, ok := o.Metadata().Brokers[nd.id]
				if !ok || b.Fenced || b.Incarnation != own.Incarnation {
					return fmt.Errorf("node %d does not see node %d's current run unfenced", other.id, nd.id)
				}
			}
		}
		return nil
	})
}

// wait polls cond until it returns nil or the cluster's wait timeout
// passes.
func (c *Cluster) wait(what string, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.waitFor)
	delay := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("gokafkatest: waiting for %s: %v", what, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// close stops every running node (abruptly: the test is over and its data
// is thrown away) and the proxies.
func (c *Cluster) close() {
	// What the nodes log while they are thrown away is noise.
	c.logw.stop()
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		srv, fs := nd.take()
		if srv == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs.kill()
			srv.Kill()
		}()
	}
	c.net.Close()
	wg.Wait()
}

// freePort returns a free loopback port below the ephemeral range
// (32768+), so that nothing is handed it between the node's runs.
func freePort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errors.New("gokafkatest: no free port found in [20000, 32000)")
}

// testLogWriter writes the nodes' logs to the test's log until the test
// is over (a late line would panic testing).
type testLogWriter struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// killableFS fails every operation once killed, so that a killed node
// writes nothing more to its data directory.
type killableFS struct{ dead atomic.Bool }

func (k *killableFS) wrap(fs partition.FS) partition.FS {
	return &partition.ErrorFS{FS: fs, Inject: func(op, name string) error {
		if k.dead.Load() {
			return &os.PathError{Op: op, Path: name, Err: syscall.EIO}
		}
		return nil
	}}
}

func (k *killableFS) kill() {
	if k != nil {
		k.dead.Store(true)
	}
}

// LogDir returns node id's data directory (kept across restarts, removed
// with the test).
func (c *Cluster) LogDir(id int32) string { return c.node(id).dir }

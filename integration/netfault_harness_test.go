package integration

// Network faults between the nodes of a real multi-process cluster, no root
// needed (the proxies are internal/faultnet's). Every connection one node opens to another (replica fetches,
// requests forwarded to the active controller, transaction markers, the
// metadata quorum's raft RPCs) goes through a TCP proxy of the test's own:
// one per ordered pair of nodes and per listener (broker, CONTROLLER). The
// nodes are told to dial their peers through those proxies with the
// test-only GOKAFKA_TEST_PEER_ROUTES (see protocol.PeerRoutesEnv); an
// advertised address is the same for every dialer, so a proxy in front of
// a listener could not tell node A's connections from node C's. Clients
// dial the nodes directly and are never cut.
//
// Faults act on directions of traffic, not on connections: blocking
// "A to B" drops every byte A sends to B, on connections A opened and on
// connections B opened alike, as a firewall dropping packets would. A
// blocked connection stays open and goes silent (a black hole: the sender
// waits for its timeout, it is not told), and is closed when the fault is
// healed, because bytes it lost cannot be replayed into a TCP stream. Delay
// holds each chunk for a while before passing it on, in order.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	gkbroker "github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/gokafkatest"
	"github.com/gokafka/gokafka/internal/faultnet"
)

// linkKind tells the two listeners of a node apart: faults may hit the
// broker listener's traffic (replica fetches, forwarded controller
// requests, markers) and the metadata quorum's separately.
type linkKind = faultnet.Kind

const (
	brokerLink = faultnet.Broker
	quorumLink = faultnet.Quorum
)

// netFault is the fault proxies of one test's cluster.
type netFault struct {
	t testing.TB
	*faultnet.Net
}

func newNetFault(t testing.TB, n int32) *netFault {
	nf := &netFault{t: t, Net: faultnet.New(n, t.Logf)}
	t.Cleanup(nf.Close)
	return nf
}

// proxy starts the proxy through which node from reaches target, a
// listener of node to, and returns its address.
func (nf *netFault) proxy(from, to int32, kind linkKind, target string) string {
	p, err := nf.Proxy(from, to, kind, target)
	if err != nil {
		nf.t.Fatal(err)
	}
	return p.Addr()
}

func (nf *netFault) ids() []int32                               { return nf.IDs() }
func (nf *netFault) dropOneWay(from, to int32)                  { nf.DropOneWay(from, to) }
func (nf *netFault) dropOneWayOn(kind linkKind, from, to int32) { nf.DropOneWayOn(kind, from, to) }
func (nf *netFault) passOneWayOn(kind linkKind, from, to int32) { nf.PassOneWayOn(kind, from, to) }
func (nf *netFault) isolate(id int32)                           { nf.Isolate(id) }
func (nf *netFault) split(groups ...[]int32)                    { nf.Split(groups...) }
func (nf *netFault) bridge(mid int32)                           { nf.Bridge(mid) }
func (nf *netFault) setDelay(from, to int32, d time.Duration)   { nf.SetDelay(from, to, d) }
func (nf *netFault) setDelayOn(kind linkKind, from, to int32, d time.Duration) {
	nf.SetDelayOn(kind, from, to, d)
}
func (nf *netFault) heal() { nf.Heal() }

// ---------------------------------------------------------------------------
// A cluster whose nodes reach each other only through the proxies.

// startNetCluster starts n nodes (each a broker and a quorum voter) as
// startCluster does, with every connection between two of them routed
// through nf's proxies. env overrides clusterDefaults.
func startNetCluster(t testing.TB, n int32, env map[string]string) (*cluster, *netFault) {
	t.Helper()
	nf := newNetFault(t, n)
	ports := make([]int, n+1)
	ctrl := make([]int, n+1)
	var voters []string
	for id := int32(1); id <= n; id++ {
		ports[id], ctrl[id] = freePort(t), freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, ctrl[id]))
	}
	c := &cluster{t: t, paused: map[int32]bool{}}
	for id := int32(1); id <= n; id++ {
		var routes []string
		for to := int32(1); to <= n; to++ {
			if to == id {
				continue
			}
			b := fmt.Sprintf("127.0.0.1:%d", ports[to])
			k := fmt.Sprintf("127.0.0.1:%d", ctrl[to])
			routes = append(routes, b+"="+nf.proxy(id, to, brokerLink, b), k+"="+nf.proxy(id, to, quorumLink, k))
		}
		settings := map[string]string{}
		for k, v := range clusterDefaults {
			settings[k] = v
		}
		for k, v := range env {
			settings[k] = v
		}
		settings["GOKAFKA_NODE_ID"] = strconv.Itoa(int(id))
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[id], ctrl[id])
		settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = strings.Join(voters, ",")
		settings["GOKAFKA_TEST_PEER_ROUTES"] = strings.Join(routes, ",")
		c.nodes = append(c.nodes, newBroker(t, brokerOpts{Port: ports[id], Env: settings}))
	}
	if keep := os.Getenv("GOKAFKA_TEST_KEEP_LOGS"); keep != "" {
		t.Cleanup(func() {
			for i, b := range c.nodes {
				data, _ := os.ReadFile(b.logPath)
				_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("%s-node%d.log", strings.ReplaceAll(t.Name(), "/", "_"), i+1)), data, 0o644)
			}
		})
	}
	c.boot(t)
	return c, nf
}

// waitPartitionOn is waitPartition asking only the nodes ids: during a
// partition the nodes on the other side keep an older view.
func (c *cluster) waitPartitionOn(t testing.TB, ids []int32, topic string, p int32, what string, cond func(partState) bool) partState {
	t.Helper()
	return c.waitPartitionAsking(t, 90*time.Second, func() []int32 { return ids }, topic, p, what+fmt.Sprintf(" on nodes %v", ids), cond)
}

// waitControllerOn waits until every node of ids names the same active
// controller, one of ids, and returns it.
func (c *cluster) waitControllerOn(t testing.TB, ids []int32) int32 {
	t.Helper()
	var ctl int32
	eventually(t, 90*time.Second, func() error {
		ctl = -1
		for _, id := range ids {
			got, err := c.controller(id)
			if err != nil {
				return err
			}
			if !slices.Contains(ids, got) {
				return fmt.Errorf("node %d names controller %d, outside %v", id, got, ids)
			}
			if ctl >= 0 && got != ctl {
				return fmt.Errorf("nodes disagree on the controller: %d and %d", ctl, got)
			}
			ctl = got
		}
		return nil
	})
	return ctl
}

// others returns the node ids of c other than the given ones.
func (c *cluster) others(not ...int32) []int32 {
	var out []int32
	for id := int32(1); id <= int32(c.size()); id++ {
		if !slices.Contains(not, id) {
			out = append(out, id)
		}
	}
	return out
}

// waitAcks is prod.waitMoreAcks for the fault tests: when the producer
// stalls and GOKAFKA_TEST_KEEP_LOGS is set, every node first dumps its
// goroutines into its log (SIGQUIT) so that a stuck broker can be told from
// a slow one.
func waitAcks(t testing.TB, c *cluster, prod *seqProducer, n int64, what string) {
	t.Helper()
	target := prod.nAcked.Load() + n
	err := poll(90*time.Second, func() error {
		if got := prod.nAcked.Load(); got < target {
			return fmt.Errorf("%d acknowledged, waiting for %d", got, target)
		}
		return nil
	})
	if err == nil {
		return
	}
	if os.Getenv("GOKAFKA_TEST_KEEP_LOGS") != "" {
		for _, b := range c.nodes {
			b.mu.Lock()
			if b.cmd != nil && b.cmd.Process != nil {
				_ = b.cmd.Process.Signal(syscall.SIGQUIT)
			}
			b.mu.Unlock()
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("producer stalled %s: %v (failures so far: %s)", what, err, prod.failureSummary())
}

// startEmbeddedNetCluster is startNetCluster with the nodes embedded in the
// test process (gokafkatest) instead of processes: the same fault proxies
// (internal/faultnet) between every ordered pair of nodes, the same
// settings (clusterDefaults and netEnv), reached through c.emb for faults
// (Isolate, Partition, Heal) and through the probes and the cluster's
// checks like any other cluster.
func startEmbeddedNetCluster(t testing.TB, n int) *cluster {
	t.Helper()
	emb := gokafkatest.NewCluster(t, gokafkatest.Nodes(n),
		gokafkatest.BrokerProperty("min.insync.replicas", clusterDefaults["GOKAFKA_MIN_INSYNC_REPLICAS"]),
		gokafkatest.Configure(func(_ int32, cfg *gkbroker.Config) {
			cfg.Replication.ReplicaSocketTimeout = 3 * time.Second // netEnv
			cfg.Quorum.ElectionTimeout = 500 * time.Millisecond    // the processes' default
		}))
	c := &cluster{t: t, paused: map[int32]bool{}, emb: emb}
	for _, id := range emb.NodeIDs() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(emb.Addr(id)), kgo.ClientID("gokafka-integration-probe"))
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		t.Cleanup(cl.Close)
		c.probes = append(c.probes, cl)
	}
	return c
}

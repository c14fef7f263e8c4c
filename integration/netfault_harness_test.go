package integration

// Network faults between the nodes of a real multi-process cluster, no root
// needed. Every connection one node opens to another (replica fetches,
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
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// linkKind tells the two listeners of a node apart: faults may hit the
// broker listener's traffic (replica fetches, forwarded controller
// requests, markers) and the metadata quorum's separately.
type linkKind int8

const (
	brokerLink linkKind = iota
	quorumLink
)

var linkKinds = []linkKind{brokerLink, quorumLink}

func (k linkKind) String() string {
	if k == quorumLink {
		return "quorum"
	}
	return "broker"
}

// dir is a direction of traffic between two nodes on one kind of link:
// bytes from node from to node to.
type dir struct {
	from, to int32
	kind     linkKind
}

type netFault struct {
	t testing.TB
	n int32

	mu      sync.Mutex
	blocked map[dir]bool
	delay   map[dir]time.Duration
	relays  map[*relay]struct{}
	closed  bool

	proxies []*linkProxy
	wg      sync.WaitGroup
}

// linkProxy carries the connections node from opens to one listener of
// node to.
type linkProxy struct {
	nf       *netFault
	from, to int32
	kind     linkKind
	ln       net.Listener
	target   string
}

// relay is one proxied connection.
type relay struct {
	nf             *netFault
	from, to       int32 // from dialed to
	kind           linkKind
	client, server net.Conn
	// lost[0] is set once bytes from the dialer to the target were
	// dropped, lost[1] for the other way. A direction that lost bytes
	// drops everything after them too (the stream has a gap), while the
	// other direction goes on; the relay is closed once every direction
	// that lost bytes would pass again.
	lost [2]atomic.Bool
	once sync.Once
}

func newNetFault(t testing.TB, n int32) *netFault {
	nf := &netFault{t: t, n: n, blocked: map[dir]bool{}, delay: map[dir]time.Duration{}, relays: map[*relay]struct{}{}}
	t.Cleanup(nf.close)
	return nf
}

// proxy starts the proxy through which node from reaches target, a
// listener of node to, and returns its address.
func (nf *netFault) proxy(from, to int32, kind linkKind, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		nf.t.Fatalf("fault proxy listen: %v", err)
	}
	p := &linkProxy{nf: nf, from: from, to: to, kind: kind, ln: ln, target: target}
	nf.proxies = append(nf.proxies, p)
	nf.wg.Add(1)
	go p.accept()
	return ln.Addr().String()
}

func (nf *netFault) close() {
	for _, p := range nf.proxies {
		p.ln.Close()
	}
	nf.mu.Lock()
	nf.closed = true
	var rs []*relay
	for r := range nf.relays {
		rs = append(rs, r)
	}
	nf.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
	nf.wg.Wait()
}

func (p *linkProxy) accept() {
	defer p.nf.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		// A node that is down refuses the connection, as it would
		// without the proxy.
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		r := &relay{nf: p.nf, from: p.from, to: p.to, kind: p.kind, client: c, server: s}
		p.nf.mu.Lock()
		if p.nf.closed {
			p.nf.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.nf.relays[r] = struct{}{}
		p.nf.wg.Add(2)
		p.nf.mu.Unlock()
		go r.pump(c, s, dir{p.from, p.to, p.kind}, &r.lost[0])
		go r.pump(s, c, dir{p.to, p.from, p.kind}, &r.lost[1])
	}
}

func (r *relay) close() {
	r.once.Do(func() {
		r.client.Close()
		r.server.Close()
		r.nf.mu.Lock()
		delete(r.nf.relays, r)
		r.nf.mu.Unlock()
	})
}

// state returns whether d is blocked and its delay.
func (nf *netFault) state(d dir) (bool, time.Duration) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	return nf.blocked[d], nf.delay[d]
}

// pump copies src to dst, dropping what d's state blocks and holding each
// chunk for d's delay. A writer goroutine applies the delay so the reader
// keeps draining src meanwhile; the block is checked again when a delayed
// chunk is due, so bytes "in flight" when a cut starts are lost too.
func (r *relay) pump(src, dst net.Conn, d dir, lost *atomic.Bool) {
	defer r.nf.wg.Done()
	defer r.close()
	type chunk struct {
		b   []byte
		due time.Time
	}
	q := make(chan chunk, 1024)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		dead := false
		for ch := range q { // drained to the end, so the reader never blocks on a dead writer
			if dead {
				continue
			}
			if w := time.Until(ch.due); w > 0 {
				time.Sleep(w)
			}
			if blocked, _ := r.nf.state(d); blocked || lost.Load() {
				lost.Store(true)
				continue
			}
			if _, err := dst.Write(ch.b); err != nil {
				dead = true
				r.close()
			}
		}
	}()
	defer func() { close(q); <-writerDone }()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			blocked, delay := r.nf.state(d)
			if blocked || lost.Load() {
				lost.Store(true)
			} else {
				q <- chunk{slices.Clone(buf[:n]), time.Now().Add(delay)}
			}
		}
		if err != nil {
			return
		}
	}
}

// set applies a change to the fault state, logs it, and closes every
// connection that lost bytes and whose two directions now pass again.
func (nf *netFault) set(what string, change func()) {
	nf.mu.Lock()
	change()
	var heal []*relay
	for r := range nf.relays {
		fwd, back := r.lost[0].Load(), r.lost[1].Load()
		if (fwd || back) && !(fwd && nf.blocked[dir{r.from, r.to, r.kind}]) && !(back && nf.blocked[dir{r.to, r.from, r.kind}]) {
			heal = append(heal, r)
		}
	}
	nf.mu.Unlock()
	for _, r := range heal {
		r.close()
	}
	nf.t.Logf("%s network: %s", time.Now().Format("15:04:05.000"), what)
}

func (nf *netFault) ids() []int32 {
	var out []int32
	for id := int32(1); id <= nf.n; id++ {
		out = append(out, id)
	}
	return out
}

// dropOneWay drops everything node from sends to node to; to's traffic to
// from still passes.
func (nf *netFault) dropOneWay(from, to int32) {
	nf.set(fmt.Sprintf("drop %d -> %d", from, to), func() {
		for _, k := range linkKinds {
			nf.blocked[dir{from, to, k}] = true
		}
	})
}

// dropOneWayOn drops what node from sends to node to on one kind of link.
func (nf *netFault) dropOneWayOn(kind linkKind, from, to int32) {
	nf.set(fmt.Sprintf("drop %d -> %d (%s links)", from, to, kind), func() { nf.blocked[dir{from, to, kind}] = true })
}

// passOneWayOn undoes dropOneWayOn.
func (nf *netFault) passOneWayOn(kind linkKind, from, to int32) {
	nf.set(fmt.Sprintf("pass %d -> %d (%s links)", from, to, kind), func() { delete(nf.blocked, dir{from, to, kind}) })
}

// cutLocked blocks both directions between a and b.
func (nf *netFault) cutLocked(a, b int32) {
	for _, k := range linkKinds {
		nf.blocked[dir{a, b, k}] = true
		nf.blocked[dir{b, a, k}] = true
	}
}

// isolate cuts node id from every other node; clients still reach it.
func (nf *netFault) isolate(id int32) {
	nf.set(fmt.Sprintf("isolate %d", id), func() {
		for _, o := range nf.ids() {
			if o != id {
				nf.cutLocked(id, o)
			}
		}
	})
}

// split replaces the current faults with a partition into groups: nodes
// in different groups cannot reach each other. A node in no group is cut
// from everyone.
func (nf *netFault) split(groups ...[]int32) {
	group := map[int32]int{}
	var desc []string
	for i, g := range groups {
		for _, id := range g {
			group[id] = i + 1
		}
		desc = append(desc, fmt.Sprint(g))
	}
	nf.set("split "+strings.Join(desc, " | "), func() {
		clear(nf.blocked)
		for _, a := range nf.ids() {
			for _, b := range nf.ids() {
				if a != b && (group[a] == 0 || group[a] != group[b]) {
					nf.cutLocked(a, b)
				}
			}
		}
	})
}

// bridge is Jepsen's bridge partition: the nodes other than mid form two
// halves that cannot reach each other, and mid reaches both. For five
// nodes and mid 3: {1,2} | {4,5}, with 3 talking to all.
func (nf *netFault) bridge(mid int32) {
	var others []int32
	for _, id := range nf.ids() {
		if id != mid {
			others = append(others, id)
		}
	}
	a, b := others[:len(others)/2], others[len(others)/2:]
	nf.set(fmt.Sprintf("bridge %v - %d - %v", a, mid, b), func() {
		clear(nf.blocked)
		for _, x := range a {
			for _, y := range b {
				nf.cutLocked(x, y)
			}
		}
	})
}

// setDelay holds what node from sends to node to for d (0 removes it).
func (nf *netFault) setDelay(from, to int32, d time.Duration) {
	nf.set(fmt.Sprintf("delay %d -> %d by %v", from, to, d), func() {
		for _, k := range linkKinds {
			nf.delay[dir{from, to, k}] = d
		}
	})
}

// setDelayOn is setDelay on one kind of link.
func (nf *netFault) setDelayOn(kind linkKind, from, to int32, d time.Duration) {
	nf.set(fmt.Sprintf("delay %d -> %d by %v (%s links)", from, to, d, kind), func() { nf.delay[dir{from, to, kind}] = d })
}

// heal removes every fault, blocks and delays alike.
func (nf *netFault) heal() {
	nf.set("heal", func() {
		clear(nf.blocked)
		clear(nf.delay)
	})
}

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
	for id := int32(1); id <= int32(len(c.nodes)); id++ {
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

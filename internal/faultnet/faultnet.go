// Package faultnet puts TCP proxies between the nodes of a test cluster
// (and between its clients and each node) and injects network faults into
// them, no root needed. The integration suite (real processes) and
// gokafkatest (nodes embedded in the test process) share it.
//
// Every connection one node opens to another (replica fetches, requests
// forwarded to the active controller, transaction markers, the metadata
// quorum's raft RPCs) goes through a proxy of its own: one per ordered
// pair of nodes and per listener (broker, CONTROLLER). The nodes are told
// to dial their peers through those proxies with protocol.PeerRoutes; an
// advertised address is the same for every dialer, so a proxy in front of
// a listener could not tell node A's connections from node C's. Clients
// may reach a node through a client proxy of its own (node 0 stands for
// "the clients" in a Dir).
//
// Faults act on directions of traffic, not on connections: blocking
// "A to B" drops every byte A sends to B, on connections A opened and on
// connections B opened alike, as a firewall dropping packets would. A
// blocked connection stays open and goes silent (a black hole: the sender
// waits for its timeout, it is not told), and is closed when the fault is
// healed, because bytes it lost cannot be replayed into a TCP stream. Delay
// holds each chunk for a while before passing it on, in order. Freezing a
// node holds every byte to and from it, client and peer, without losing
// any: the connections stay open, the senders' writes back up once the
// socket buffers are full, and everything flows again in order on thaw —
// what the network sees of a process stopped with SIGSTOP.
package faultnet

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind tells the listeners of a node apart: faults may hit the broker
// listener's traffic (replica fetches, forwarded controller requests,
// markers), the metadata quorum's and the clients' separately.
type Kind int8

const (
	// Broker is a node's broker (inter-broker) listener.
	Broker Kind = iota
	// Quorum is a node's CONTROLLER listener.
	Quorum
	// Client is a client's connection to a node (from is 0).
	Client
)

// PeerKinds are the kinds of link between two nodes.
var PeerKinds = []Kind{Broker, Quorum}

func (k Kind) String() string {
	switch k {
	case Quorum:
		return "quorum"
	case Client:
		return "client"
	}
	return "broker"
}

// Dir is a direction of traffic between two nodes on one kind of link:
// bytes from node From to node To. Node 0 is the clients.
type Dir struct {
	From, To int32
	Kind     Kind
}

// Logf receives a line per fault change.
type Logf func(format string, args ...any)

// Net is the proxies of one cluster of nodes 1..n and their faults.
type Net struct {
	n    int32
	logf Logf

	mu      sync.Mutex
	blocked map[Dir]bool
	delay   map[Dir]time.Duration
	frozen  map[int32]bool
	// thawed is closed (and replaced) whenever a node thaws.
	thawed chan struct{}
	relays map[*relay]struct{}
	closed bool

	proxies []*Proxy
	wg      sync.WaitGroup
}

// Proxy carries the connections node from opens to one listener of node
// to.
type Proxy struct {
	nf       *Net
	from, to int32
	kind     Kind
	ln       net.Listener
	target   atomic.Pointer[string]
}

// relay is one proxied connection.
type relay struct {
	nf             *Net
	from, to       int32 // from dialed to
	kind           Kind
	client, server net.Conn
	// lost[0] is set once bytes from the dialer to the target were
	// dropped, lost[1] for the other way. A direction that lost bytes
	// drops everything after them too (the stream has a gap), while the
	// other direction goes on; the relay is closed once every direction
	// that lost bytes would pass again.
	lost [2]atomic.Bool
	once sync.Once
}

// New returns the fault state of nodes 1..n; logf (may be nil) is told
// every change. Close it when done.
func New(n int32, logf Logf) *Net {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Net{n: n, logf: logf, blocked: map[Dir]bool{}, delay: map[Dir]time.Duration{}, frozen: map[int32]bool{},
		thawed: make(chan struct{}), relays: map[*relay]struct{}{}}
}

// Proxy starts the proxy through which node from (0: the clients)
// reaches target, a listener of node to of the given kind.
func (nf *Net) Proxy(from, to int32, kind Kind, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy listen: %w", err)
	}
	p := &Proxy{nf: nf, from: from, to: to, kind: kind, ln: ln}
	p.target.Store(&target)
	nf.mu.Lock()
	nf.proxies = append(nf.proxies, p)
	nf.mu.Unlock()
	nf.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, to dial instead of its target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget points the proxy's new connections at target (a node that
// came back on another port).
func (p *Proxy) SetTarget(target string) { p.target.Store(&target) }

// Close stops every proxy and closes every connection through them.
func (nf *Net) Close() {
	nf.mu.Lock()
	nf.closed = true
	proxies := slices.Clone(nf.proxies)
	var rs []*relay
	for r := range nf.relays {
		rs = append(rs, r)
	}
	// Pumps waiting for a thaw must see the close.
	close(nf.thawed)
	nf.thawed = make(chan struct{})
	nf.mu.Unlock()
	for _, p := range proxies {
		p.ln.Close()
	}
	for _, r := range rs {
		r.close()
	}
	nf.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.nf.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		// A node that is down refuses the connection, as it would
		// without the proxy: a reset, not an orderly close, which a
		// client could take for a broker that wants TLS (franz-go does
		// not retry an EOF during its first request).
		s, err := net.DialTimeout("tcp", *p.target.Load(), 5*time.Second)
		if err != nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
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
		go r.pump(c, s, Dir{p.from, p.to, p.kind}, &r.lost[0])
		go r.pump(s, c, Dir{p.to, p.from, p.kind}, &r.lost[1])
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
func (nf *Net) state(d Dir) (bool, time.Duration) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	return nf.blocked[d], nf.delay[d]
}

// waitThawed returns once neither end of d is frozen (or the proxies
// closed).
func (nf *Net) waitThawed(d Dir) {
	for {
		nf.mu.Lock()
		if nf.closed || (!nf.frozen[d.From] && !nf.frozen[d.To]) {
			nf.mu.Unlock()
			return
		}
		ch := nf.thawed
		nf.mu.Unlock()
		<-ch
	}
}

// pump copies src to dst, dropping what d's state blocks and holding each
// chunk for d's delay. A writer goroutine applies the delay so the reader
// keeps draining src meanwhile; the block is checked again when a delayed
// chunk is due, so bytes "in flight" when a cut starts are lost too. A
// frozen end stops the reader (the sender backs up) and holds the chunks
// already read until the thaw.
func (r *relay) pump(src, dst net.Conn, d Dir, lost *atomic.Bool) {
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
			r.nf.waitThawed(d)
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
		r.nf.waitThawed(d)
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
func (nf *Net) set(what string, change func()) {
	nf.mu.Lock()
	change()
	var heal []*relay
	for r := range nf.relays {
		fwd, back := r.lost[0].Load(), r.lost[1].Load()
		if (fwd || back) && !(fwd && nf.blocked[Dir{r.from, r.to, r.kind}]) && !(back && nf.blocked[Dir{r.to, r.from, r.kind}]) {
			heal = append(heal, r)
		}
	}
	nf.mu.Unlock()
	for _, r := range heal {
		r.close()
	}
	nf.logf("%s network: %s", time.Now().Format("15:04:05.000"), what)
}

// IDs returns the node ids, 1..n.
func (nf *Net) IDs() []int32 {
	var out []int32
	for id := int32(1); id <= nf.n; id++ {
		out = append(out, id)
	}
	return out
}

// DropOneWay drops everything node from sends to node to; to's traffic to
// from still passes.
func (nf *Net) DropOneWay(from, to int32) {
	nf.set(fmt.Sprintf("drop %d -> %d", from, to), func() {
		for _, k := range PeerKinds {
			nf.blocked[Dir{from, to, k}] = true
		}
	})
}

// DropOneWayOn drops what node from sends to node to on one kind of link.
func (nf *Net) DropOneWayOn(kind Kind, from, to int32) {
	nf.set(fmt.Sprintf("drop %d -> %d (%s links)", from, to, kind), func() { nf.blocked[Dir{from, to, kind}] = true })
}

// PassOneWayOn undoes DropOneWayOn.
func (nf *Net) PassOneWayOn(kind Kind, from, to int32) {
	nf.set(fmt.Sprintf("pass %d -> %d (%s links)", from, to, kind), func() { delete(nf.blocked, Dir{from, to, kind}) })
}

// cutLocked blocks both directions between a and b.
func (nf *Net) cutLocked(a, b int32) {
	for _, k := range PeerKinds {
		nf.blocked[Dir{a, b, k}] = true
		nf.blocked[Dir{b, a, k}] = true
	}
}

// Isolate cuts node id from every other node; clients still reach it.
func (nf *Net) Isolate(id int32) {
	nf.set(fmt.Sprintf("isolate %d", id), func() {
		for _, o := range nf.IDs() {
			if o != id {
				nf.cutLocked(id, o)
			}
		}
	})
}

// Split replaces the current blocks with a partition into groups: nodes
// in different groups cannot reach each other. A node in no group is cut
// from everyone. Clients still reach every node.
func (nf *Net) Split(groups ...[]int32) {
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
		for _, a := range nf.IDs() {
			for _, b := range nf.IDs() {
				if a != b && (group[a] == 0 || group[a] != group[b]) {
					nf.cutLocked(a, b)
				}
			}
		}
	})
}

// Bridge is Jepsen's bridge partition: the nodes other than mid form two
// halves that cannot reach each other, and mid reaches both. For five
// nodes and mid 3: {1,2} | {4,5}, with 3 talking to all.
func (nf *Net) Bridge(mid int32) {
	var others []int32
	for _, id := range nf.IDs() {
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

// SetDelay holds what node from sends to node to for d (0 removes it).
func (nf *Net) SetDelay(from, to int32, d time.Duration) {
	nf.set(fmt.Sprintf("delay %d -> %d by %v", from, to, d), func() {
		for _, k := range PeerKinds {
			nf.delay[Dir{from, to, k}] = d
		}
	})
}

// SetDelayOn is SetDelay on one kind of link.
func (nf *Net) SetDelayOn(kind Kind, from, to int32, d time.Duration) {
	nf.set(fmt.Sprintf("delay %d -> %d by %v (%s links)", from, to, d, kind), func() { nf.delay[Dir{from, to, kind}] = d })
}

// Freeze holds every byte to and from node id, on every kind of link,
// until Thaw.
func (nf *Net) Freeze(id int32) {
	nf.set(fmt.Sprintf("freeze %d", id), func() { nf.frozen[id] = true })
}

// Thaw lets node id's traffic flow again, held bytes first.
func (nf *Net) Thaw(id int32) {
	nf.set(fmt.Sprintf("thaw %d", id), func() {
		delete(nf.frozen, id)
		close(nf.thawed)
		nf.thawed = make(chan struct{})
	})
}

// Sever closes every connection to and from node id at once, as the
// death of its process would (the peers see a reset, not silence).
func (nf *Net) Sever(id int32) {
	nf.mu.Lock()
	var rs []*relay
	for r := range nf.relays {
		if r.from == id || r.to == id {
			rs = append(rs, r)
		}
	}
	nf.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
	nf.logf("%s network: connections of %d severed", time.Now().Format("15:04:05.000"), id)
}

// Heal removes every block and delay (frozen nodes stay frozen).
func (nf *Net) Heal() {
	nf.set("heal", func() {
		clear(nf.blocked)
		clear(nf.delay)
	})
}

// Mute drops everything node id sends, to its peers and to its clients,
// until Unmute: what a process that died mid-write gets out.
func (nf *Net) Mute(id int32) {
	nf.set(fmt.Sprintf("mute %d", id), func() {
		for _, o := range nf.IDs() {
			if o != id {
				for _, k := range PeerKinds {
					nf.blocked[Dir{id, o, k}] = true
				}
			}
		}
		nf.blocked[Dir{id, 0, Client}] = true
	})
}

// Unmute undoes Mute.
func (nf *Net) Unmute(id int32) {
	nf.set(fmt.Sprintf("unmute %d", id), func() {
		for _, o := range nf.IDs() {
			for _, k := range PeerKinds {
				delete(nf.blocked, Dir{id, o, k})
			}
		}
		delete(nf.blocked, Dir{id, 0, Client})
	})
}

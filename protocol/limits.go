package protocol

// Resource limits of the network edge, with Kafka's names:
//
//   - max.connections and listener.name.<listener>.max.connections: when a
//     limit is reached the listener stops accepting (new connections wait
//     in the kernel's listen backlog) until a connection closes, as Kafka's
//     Acceptor does. The inter-broker listener is not held back by
//     max.connections, only by its own limit (Kafka also closes another
//     listener's least recently used connection then; gokafka does not).
//   - max.connections.per.ip and max.connections.per.ip.overrides: a
//     connection from an address that already holds its maximum is
//     accepted and closed at once with a log line, as Kafka's
//     ConnectionQuotas does.
//   - queued.max.requests: requests read off their sockets and being served
//     across the broker. A reader whose request finds no slot waits (its
//     connection is muted) until one frees. A handler that parks (a
//     long-poll fetch, an acks=all wait) gives its slot back first
//     (Request.Park), as Kafka moves such requests to purgatory and frees
//     its request handler.
//   - queued.max.request.bytes: bytes of request frames held across the
//     broker (-1: no limit). Like Kafka's non-strict memory pool, a frame
//     is admitted while anything is left, so one frame larger than the
//     whole allowance is still served, alone.
//   - socket.request.max.bytes caps a frame, and the frame's buffer grows
//     as its bytes arrive: a size prefix alone never allocates it.
//   - connections.max.idle.ms is also the write deadline of every
//     response: a client that stops reading is disconnected, and its
//     queued responses (and the files they pin) are dropped.
//   - Per connection at most MaxQueuedResponses (8) responses wait for the
//     writer, holding at most MaxQueuedResponseBytes (64 MiB) plus one
//     response in memory: Kafka mutes a connection until its response is
//     sent, gokafka lets a client pipeline within these bounds.

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
)

// budget is an allowance shared by every connection. A nil budget has no
// limit.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// freed, made by a taker that has to wait, is closed by the next
	// give; nil while nobody waits, so that a give under the limit (every
	// request's) allocates nothing.
	freed chan struct{}
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		return nil
	}
	return &budget{limit: limit}
}

// take takes n once anything is left (n may exceed what is left), waiting
// until then or until ctx is done. It reports whether n was taken.
func (b *budget) take(ctx context.Context, n int64) bool {
	if b == nil {
		return true
	}
	for {
		b.mu.Lock()
		if b.used < b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *budget) give(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// requestChunk is the first allocation for a frame's body; the buffer
// doubles from there as the bytes arrive.
const requestChunk = 64 << 10

// readRequest reads a frame body of size bytes. Its buffer grows with the
// bytes that actually arrive, so a client announcing 100 MB and sending
// little costs little.
func readRequest(r io.Reader, size int32) ([]byte, error) {
	buf := getRequestBuf(size)
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(int(size), max(2*cap(buf), requestChunk)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):min(cap(buf), int(size))])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// hostOf returns the IP of a remote address.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// acceptSlot waits until listener may hold another connection under
// max.connections and its listener.name.<listener>.max.connections and,
// with reserve, takes the slot. The acceptor waits without reserving
// before it accepts (an idle acceptor must not hold a slot another
// listener could use) and reserves after; like Kafka's acceptor it may
// then wait again, holding the one socket it accepted. It returns false
// when the server is closing.
func (s *Server) acceptSlot(listener string, reserve bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := false
	defer func() {
		if waiting {
			s.mu.acceptWaiting--
		}
	}()
	for !s.mu.closing {
		total, perListener := s.mu.accepted, s.mu.perListener[listener]
		lim := s.cfg.ListenerMaxConnections[listener]
		brokerWide := s.cfg.MaxConnections <= 0 || total < s.cfg.MaxConnections ||
			listener != "" && listener == s.cfg.InterBrokerListener
		if brokerWide && (lim <= 0 || perListener < lim) {
			if reserve {
				s.mu.accepted++
				s.mu.perListener[listener]++
			}
			return true
		}
		if !waiting {
			waiting = true
			s.mu.acceptWaiting++
			s.logger.Warn().Str("listener", listener).Int("connections", total).Int("listener_connections", perListener).
				Int("max_connections", s.cfg.MaxConnections).Int("listener_max_connections", lim).
				Msg("connection limit reached; not accepting until a connection closes")
		}
		s.connClosed.Wait()
	}
	return false
}

// releaseSlotLocked gives back a slot taken by acceptSlot.
func (s *Server) releaseSlotLocked(listener string) {
	s.mu.accepted--
	if s.mu.perListener[listener]--; s.mu.perListener[listener] <= 0 {
		delete(s.mu.perListener, listener)
	}
	s.connClosed.Broadcast()
}

// ipLimit is max.connections.per.ip for ip, with its override if any.
func (s *Server) ipLimit(ip string) int {
	if n, ok := s.cfg.MaxConnectionsPerIPOverrides[ip]; ok {
		return n
	}
	return s.cfg.MaxConnectionsPerIP
}

// Park tells the server that the handler is about to wait (a long-poll
// fetch, an acks=all produce) and gives the request's queued.max.requests
// slot back, so that parked requests never keep others from being
// served. It may be called more than once.
func (r *Request) Park() {
	if r != nil && r.park != nil {
		r.park()
	}
}

// GoroutinePanic is what a Group re-raises in the goroutine that waits
// for it: the value a goroutine of the group panicked with and its stack.
type GoroutinePanic struct {
	Value any
	Stack []byte
}

func (p *GoroutinePanic) Error() string {
	return fmt.Sprintf("%v\n\ngoroutine stack:\n%s", p.Value, p.Stack)
}

// Group runs a request's work on at most limit goroutines at once. A
// goroutine's panic is recovered and re-raised by Wait in the handler's
// own goroutine, where the server's recovery logs it with the original
// stack and closes that connection only, as for a panic of the handler
// itself. Every goroutine a handler starts goes through a Group.
type Group struct {
	sem chan struct{}
	wg  sync.WaitGroup

	mu    sync.Mutex
	panic *GoroutinePanic
}

// NewGroup returns a group running at most limit (at least 1) functions
// at once.
func NewGroup(limit int) *Group {
	return &Group{sem: make(chan struct{}, max(limit, 1))}
}

// Go runs fn on a goroutine of the group, first waiting while limit are
// running.
func (g *Group) Go(fn func()) {
	g.sem <- struct{}{}
	g.wg.Add(1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				g.mu.Lock()
				if g.panic == nil {
					g.panic = &GoroutinePanic{Value: r, Stack: debug.Stack()}
				}
				g.mu.Unlock()
			}
			<-g.sem
			g.wg.Done()
		}()
		fn()
	}()
}

// Wait waits for every function started with Go and re-raises the first
// panic among them.
func (g *Group) Wait() {
	g.wg.Wait()
	g.mu.Lock()
	p := g.panic
	g.mu.Unlock()
	if p != nil {
		panic(p)
	}
}

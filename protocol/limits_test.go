package protocol

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/internal/testkit"
)

// serveReg starts a server with reg on a loopback listener named name and
// returns it with its address.
func serveReg(t *testing.T, cfg Config, reg *Registry, name string) (*Server, string) {
	t.Helper()
	srv := NewServer(cfg, reg, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ln, ListenerConfig{Name: name}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return srv, ln.Addr().String()
}

func apiVersionsReg() *Registry {
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return reg.ApiVersionsResponse(req.Version, 0), nil
	})
	return reg
}

// eventually polls cond until it holds or the test's deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Every 5 ms: some states (responses queued before a write deadline
	// closes the connection) last only a few hundred milliseconds.
	err := testkit.PollEvery(5*time.Millisecond, 20*time.Second, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func (s *Server) numConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

func (s *Server) acceptorsWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.acceptWaiting
}

func roundTrip(t *testing.T, c net.Conn, corr int32) {
	t.Helper()
	send(t, c, kmsg.NewPtrApiVersionsRequest(), corr)
	if got, _ := recv(t, c, false); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
}

// A size prefix of 100 MB followed by a few bytes must not make the server
// allocate 100 MB: the buffer grows with the bytes that arrive.
func TestRequestBufferGrowsAsBytesArrive(t *testing.T) {
	_, addr := serveReg(t, DefaultConfig(), apiVersionsReg(), "")
	const conns, announced = 8, 100 << 20
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range conns {
		c := dial(t, addr)
		frame := binary.BigEndian.AppendUint32(nil, announced)
		frame = append(frame, make([]byte, 200<<10)...)
		c.Write(frame)
		// The half close ends the frame early: once the server closes the
		// connection it has done all it will do with the prefix.
		c.(*net.TCPConn).CloseWrite()
		expectClosed(t, c)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("%d connections announcing %d bytes and sending 200 KiB made the process allocate %d bytes", conns, announced, grew)
	}
}

// A client that pipelines requests and never reads their responses is
// disconnected once a response cannot be written for
// connections.max.idle.ms, and its queued responses are dropped.
func TestWriteDeadlineDisconnectsClientThatStopsReading(t *testing.T) {
	reg := NewRegistry()
	big := make([]kmsg.MetadataResponseTopic, 20000)
	for i := range big {
		name := strings.Repeat("t", 40)
		big[i] = kmsg.MetadataResponseTopic{Topic: &name}
	}
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
		resp.Topics = big
		return resp, nil
	})
	cfg := DefaultConfig()
	cfg.IdleTimeout = 300 * time.Millisecond
	srv, addr := serveReg(t, cfg, reg, "")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	eventually(t, "the connection to be accepted", func() bool { return srv.numConns() == 1 })
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("reader-never")).AppendRequest(nil, req, 1)
	// Keep sending (the server keeps reading requests until its queue is
	// full), never reading a response.
	go func() {
		for range 64 {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	eventually(t, "responses to be queued", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for c := range srv.mu.conns {
			return len(c.out) > 0
		}
		return false
	})
	eventually(t, "the non-reading connection to be closed", func() bool { return srv.numConns() == 0 })
}

// max.connections.per.ip: a connection beyond the address's maximum is
// accepted and closed at once; the others keep working. An override
// replaces the default for its address.
func TestMaxConnectionsPerIPAcceptsThenCloses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"default", func(c *Config) { c.MaxConnectionsPerIP = 2 }},
		{"override", func(c *Config) {
			c.MaxConnectionsPerIP = 100
			c.MaxConnectionsPerIPOverrides = map[string]int{"127.0.0.1": 2}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			srv, addr := serveReg(t, cfg, apiVersionsReg(), "")
			a, b := dial(t, addr), dial(t, addr)
			roundTrip(t, a, 1)
			roundTrip(t, b, 2)
			third := dial(t, addr)
			expectClosed(t, third)
			roundTrip(t, a, 3)
			if n := srv.numConns(); n != 2 {
				t.Fatalf("%d connections held, want 2", n)
			}
			// A slot freed by a close is usable again.
			b.Close()
			eventually(t, "the closed connection to be released", func() bool { return srv.numConns() == 1 })
			roundTrip(t, dial(t, addr), 4)
		})
	}
}

// max.connections and listener.name.X.max.connections: at the limit the
// listener stops accepting until a connection closes (Kafka's acceptor
// blocks the same way); the waiting client is then served.
func TestMaxConnectionsStopsAcceptingUntilOneCloses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"broker", func(c *Config) { c.MaxConnections = 2 }},
		{"listener", func(c *Config) { c.ListenerMaxConnections = map[string]int{"CLIENTS": 2, "OTHER": 1} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			srv, addr := serveReg(t, cfg, apiVersionsReg(), "CLIENTS")
			a, b := dial(t, addr), dial(t, addr)
			roundTrip(t, a, 1)
			roundTrip(t, b, 2)
			eventually(t, "the acceptor to wait for a slot", func() bool { return srv.acceptorsWaiting() == 1 })
			third := dial(t, addr) // completes in the kernel's backlog
			send(t, third, kmsg.NewPtrApiVersionsRequest(), 3)
			if n := srv.numConns(); n != 2 {
				t.Fatalf("%d connections accepted, want 2", n)
			}
			a.Close()
			if corr, _ := recv(t, third, false); corr != 3 {
				t.Fatalf("correlation %d, want 3", corr)
			}
		})
	}
}

// queued.max.requests: with every slot taken by a request being served, a
// second connection's request waits; it is served once the first handler
// returns, or once it parks.
func TestQueuedMaxRequestsMutesUntilASlotFrees(t *testing.T) {
	for _, park := range []bool{false, true} {
		name := "handler_returns"
		if park {
			name = "handler_parks"
		}
		t.Run(name, func(t *testing.T) {
			reg := apiVersionsReg()
			entered, release := make(chan struct{}), make(chan struct{})
			var served atomic.Int32
			reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
				if served.Add(1) == 1 {
					close(entered)
					if park {
						req.Park()
					}
					<-release
				}
				return req.Body.(*kmsg.MetadataRequest).ResponseKind(), nil
			})
			cfg := DefaultConfig()
			cfg.QueuedMaxRequests = 1
			srv, addr := serveReg(t, cfg, reg, "")
			a, b := dial(t, addr), dial(t, addr)
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(9)
			send(t, a, md, 1)
			<-entered
			send(t, b, md, 2)
			if park {
				if corr, _ := recv(t, b, true); corr != 2 {
					t.Fatalf("correlation %d, want 2", corr)
				}
				close(release)
				recv(t, a, true)
				return
			}
			eventually(t, "the second request to wait for a slot", func() bool {
				srv.requests.mu.Lock()
				defer srv.requests.mu.Unlock()
				return srv.requests.used == 1 && served.Load() == 1
			})
			// The second request has not reached its handler while the
			// first holds the only slot.
			time.Sleep(50 * time.Millisecond)
			if n := served.Load(); n != 1 {
				t.Fatalf("%d requests served with one slot held", n)
			}
			close(release)
			recv(t, a, true)
			if corr, _ := recv(t, b, true); corr != 2 {
				t.Fatalf("correlation %d, want 2", corr)
			}
		})
	}
}

// queued.max.request.bytes: frames held across the broker are bounded; a
// frame waits until the bytes of another are given back.
func TestQueuedMaxRequestBytesBoundsHeldFrames(t *testing.T) {
	reg := apiVersionsReg()
	entered, release := make(chan struct{}), make(chan struct{})
	var served atomic.Int32
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		if served.Add(1) == 1 {
			close(entered)
			req.Park() // the request slot is free; the bytes are still held
			<-release
		}
		return req.Body.(*kmsg.MetadataRequest).ResponseKind(), nil
	})
	cfg := DefaultConfig()
	cfg.QueuedMaxRequestBytes = 10
	srv, addr := serveReg(t, cfg, reg, "")
	a, b := dial(t, addr), dial(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	send(t, a, md, 1)
	<-entered
	send(t, b, md, 2)
	time.Sleep(50 * time.Millisecond)
	if n := served.Load(); n != 1 {
		t.Fatalf("%d requests served while the first frame holds the byte allowance", n)
	}
	close(release)
	recv(t, a, true)
	if corr, _ := recv(t, b, true); corr != 2 {
		t.Fatalf("correlation %d, want 2", corr)
	}
	srv.requestBytes.mu.Lock()
	defer srv.requestBytes.mu.Unlock()
	if srv.requestBytes.used != 0 {
		t.Fatalf("%d request bytes still held", srv.requestBytes.used)
	}
}

func TestGroupRunsAtMostLimitAtOnce(t *testing.T) {
	g := NewGroup(3)
	var running, peak atomic.Int32
	var mu sync.Mutex
	for range 50 {
		g.Go(func() {
			n := running.Add(1)
			mu.Lock()
			peak.Store(max(peak.Load(), n))
			mu.Unlock()
			runtime.Gosched()
			running.Add(-1)
		})
	}
	g.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak concurrency %d, limit 3", p)
	}
}

// A panic in a goroutine a handler started is handled like a panic of the
// handler: that connection closes, the server and other connections live.
func TestGroupPanicClosesOnlyItsConnection(t *testing.T) {
	reg := apiVersionsReg()
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		g := NewGroup(2)
		for i := range 4 {
			g.Go(func() {
				if i == 2 {
					var m map[string]int
					m["boom"]++ // a nil-map write: a runtime panic
				}
			})
		}
		g.Wait()
		return req.Body.(*kmsg.MetadataRequest).ResponseKind(), nil
	})
	_, addr := serveReg(t, DefaultConfig(), reg, "")
	good, bad := dial(t, addr), dial(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	send(t, bad, md, 1)
	expectClosed(t, bad)
	roundTrip(t, good, 2)
}

// At max.connections the inter-broker listener still accepts (Kafka lets
// broker-to-broker connections in at the broker-wide limit).
func TestMaxConnectionsLetsInterBrokerListenerIn(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnections = 1
	cfg.InterBrokerListener = "BROKER"
	srv := NewServer(cfg, apiVersionsReg(), zerolog.Nop())
	var addrs []string
	for _, name := range []string{"CLIENT", "BROKER"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.ServeListener(ln, ListenerConfig{Name: name})
		addrs = append(addrs, ln.Addr().String())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	roundTrip(t, dial(t, addrs[0]), 1)
	eventually(t, "the client listener to stop accepting", func() bool { return srv.acceptorsWaiting() >= 1 })
	roundTrip(t, dial(t, addrs[1]), 2)
}

// A client that pipelines requests with large responses and does not read
// them makes its connection hold at most MaxQueuedResponseBytes (plus the
// response being written and one more) in memory, not MaxQueuedResponses
// of them.
func TestQueuedResponseBytesBounded(t *testing.T) {
	reg := NewRegistry()
	big := make([]kmsg.MetadataResponseTopic, 40000)
	for i := range big {
		name := strings.Repeat("t", 40)
		big[i] = kmsg.MetadataResponseTopic{Topic: &name}
	}
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
		resp.Topics = big
		return resp, nil
	})
	cfg := DefaultConfig()
	cfg.MaxQueuedResponseBytes = 2 << 20 // about one response
	srv, addr := serveReg(t, cfg, reg, "")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("reader-never")).AppendRequest(nil, req, 1)
	go func() {
		for range 32 {
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	conn := func() *conn {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for c := range srv.mu.conns {
			return c
		}
		return nil
	}
	eventually(t, "the reader to wait for room in the response queue", func() bool {
		sc := conn()
		if sc == nil {
			return false
		}
		sc.outBytes.mu.Lock()
		defer sc.outBytes.mu.Unlock()
		return sc.outBytes.used >= sc.outBytes.limit || len(sc.out) == cap(sc.out)
	})
	if n := len(conn().out); n > 2 {
		t.Fatalf("%d responses of about 2 MiB queued with a 2 MiB bound", n)
	}
}

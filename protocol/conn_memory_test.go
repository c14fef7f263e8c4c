package protocol

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Many clients keep a connection open and send now and then (a producer
// per application instance): what such a connection holds between
// requests is what thousands of them cost.

// TestConnectionWaitingForARequestKeepsOneGoroutine checks that a served
// connection waiting for its next request holds its reader goroutine
// only: the writer runs while responses are queued and stops when the
// queue is empty.
func TestConnectionWaitingForARequestKeepsOneGoroutine(t *testing.T) {
	addr := testServer(t, DefaultConfig())
	// The server's own goroutines (accept loop) are running already;
	// wait for the count to settle before taking the baseline.
	c0 := dial(t, addr)
	send(t, c0, kmsg.NewPtrApiVersionsRequest(), 0)
	recv(t, c0, false)
	time.Sleep(100 * time.Millisecond)
	base := runtime.NumGoroutine()

	const conns = 40
	for i := range conns {
		c := dial(t, addr)
		for j := range 3 {
			send(t, c, kmsg.NewPtrApiVersionsRequest(), int32(j))
		}
		for j := range 3 {
			if corr, _ := recv(t, c, false); corr != int32(j) {
				t.Fatalf("connection %d: response %d has correlation %d", i, j, corr)
			}
		}
	}
	// Between requests: one goroutine per connection, plus a little
	// slack for the runtime's own.
	if n := settledGoroutines(func(n int) bool { return n-base <= conns+5 }); n-base > conns+5 {
		t.Fatalf("%d connections waiting for a request hold %d goroutines, want about one each", conns, n-base)
	}

	// A connection that is served again gets its writer back.
	c := dial(t, addr)
	for j := range 2 {
		send(t, c, kmsg.NewPtrApiVersionsRequest(), int32(j))
		if corr, _ := recv(t, c, false); corr != int32(j) {
			t.Fatalf("response %d has correlation %d", j, corr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settledGoroutines polls the goroutine count until done accepts it or
// about five seconds pass, and returns the last count.
func settledGoroutines(done func(int) bool) int {
	n := runtime.NumGoroutine()
	for range 100 {
		if done(n) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestConnectionThatLogsNothingBuildsNoLogger checks that serving
// requests whose handlers do not log, on a server that does not log
// closes at its level, builds no per-connection logger (each holds a
// buffer of its own).
func TestConnectionThatLogsNothingBuildsNoLogger(t *testing.T) {
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return reg.ApiVersionsResponse(req.Version, 0), nil
	})
	srv := NewServer(DefaultConfig(), reg, zerolog.Nop().Level(zerolog.InfoLevel))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}()
	c := dial(t, ln.Addr().String())
	for j := range 3 {
		send(t, c, kmsg.NewPtrApiVersionsRequest(), int32(j))
		recv(t, c, false)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.mu.conns) != 1 {
		t.Fatalf("%d connections", len(srv.mu.conns))
	}
	for sc := range srv.mu.conns {
		sc.logMu.Lock()
		built := sc.reqLogger != nil || sc.logger != nil
		sc.logMu.Unlock()
		if built {
			t.Error("a logger was built for a connection that logged nothing")
		}
	}
}

// A handler's goroutine may log through its request while the reader
// logs for the connection: the logger built on first use must be built
// once, without a race (go test -race).
func TestConnectionLoggerBuiltOnceWhileHandlersLog(t *testing.T) {
	c := &conn{srv: &Server{logger: zerolog.Nop()}, info: &ConnInfo{ID: 1, RemoteAddr: "127.0.0.1:1"}}
	var wg sync.WaitGroup
	var reader *zerolog.Logger
	wg.Add(2)
	go func() { defer wg.Done(); c.requestLogger("client-a").Debug().Msg("handler") }()
	go func() { defer wg.Done(); reader = c.log() }()
	wg.Wait()
	if c.log() != reader {
		t.Fatal("the connection's logger was built twice")
	}
}

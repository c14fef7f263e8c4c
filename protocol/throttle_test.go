package protocol

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleServer serves Metadata, throttling the request whose first
// topic is "throttle" by an hour, and counts the requests served.
func throttleServer(t *testing.T) (addr string, served *atomic.Int32) {
	t.Helper()
	served = new(atomic.Int32)
	reg := NewRegistry()
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		served.Add(1)
		r := req.Body.(*kmsg.MetadataRequest)
		if len(r.Topics) > 0 && r.Topics[0].Topic != nil && *r.Topics[0].Topic == "throttle" {
			req.Throttle = time.Hour
		}
		return r.ResponseKind(), nil
	})
	srv := NewServer(DefaultConfig(), reg, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return ln.Addr().String(), served
}

func metadataFor(version int16, topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	return req
}

// expectNothing asserts that nothing arrives on c for a while.
func expectNothing(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	if n, err := c.Read(b[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got n=%d err=%v, want nothing", n, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
}

func TestThrottledConnectionGetsItsResponseThenIsMuted(t *testing.T) {
	addr, served := throttleServer(t)
	c := dial(t, addr)
	// Metadata v6+ clients throttle themselves (KIP-219): the response
	// goes out at once, then nothing more is read from the connection.
	send(t, c, metadataFor(9, "throttle"), 1)
	if corr, _ := recv(t, c, true); corr != 1 {
		t.Fatalf("correlation id %d, want 1", corr)
	}
	send(t, c, metadataFor(9, "other"), 2)
	expectNothing(t, c)
	if n := served.Load(); n != 1 {
		t.Fatalf("%d requests served while muted, want 1", n)
	}
	// Other connections are not muted.
	c2 := dial(t, addr)
	send(t, c2, metadataFor(9, "other"), 3)
	if corr, _ := recv(t, c2, true); corr != 3 {
		t.Fatalf("correlation id %d, want 3", corr)
	}
}

func TestThrottleBeforeKIP219DelaysTheResponse(t *testing.T) {
	addr, _ := throttleServer(t)
	c := dial(t, addr)
	// Metadata v5 predates KIP-219: the response itself waits.
	send(t, c, metadataFor(5, "throttle"), 1)
	expectNothing(t, c)
}

package protocol

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testServer starts a Server on a loopback port with handlers for
// ApiVersions (0-4), Metadata (0-12, which panics when asked for topic
// "panic"), and returns its address.
func testServer(t testing.TB, cfg Config) string {
	t.Helper()
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return reg.ApiVersionsResponse(req.Version, 0), nil
	})
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		r := req.Body.(*kmsg.MetadataRequest)
		for _, tp := range r.Topics {
			if tp.Topic != nil && *tp.Topic == "panic" {
				panic("handler bug")
			}
		}
		return r.ResponseKind(), nil
	})
	srv := NewServer(cfg, reg, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func send(t *testing.T, c net.Conn, req kmsg.Request, corr int32) {
	t.Helper()
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, corr)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// recv reads one response frame and returns the correlation id and body,
// skipping the flexible header's tags when flexibleHeader is set.
func recv(t *testing.T, c net.Conn, flexibleHeader bool) (int32, []byte) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read size: %v", err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read body: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(buf))
	body := buf[4:]
	if flexibleHeader {
		body = body[1:]
	}
	return corr, body
}

// expectClosed asserts the server closes c without sending anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	var b [1]byte
	n, err := c.Read(b[:])
	if n != 0 || !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want connection closed, got n=%d err=%v", n, err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func TestApiVersionsUnknownVersionAnswersV0WithRanges(t *testing.T) {
	c := dial(t, testServer(t, DefaultConfig()))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(9999)
	send(t, c, req, 7)
	corr, body := recv(t, c, false)
	if corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 {
		t.Fatalf("error code %d, want 35", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 2 || resp.ApiKeys[0].ApiKey != 3 || resp.ApiKeys[1].MaxVersion != 4 {
		t.Fatalf("ranges %+v", resp.ApiKeys)
	}
	// The connection stays usable: retry at v3 (flexible request, but the
	// response header stays v0).
	req.SetVersion(3)
	send(t, c, req, 8)
	corr, body = recv(t, c, false)
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(body); err != nil || corr != 8 || resp.ErrorCode != 0 {
		t.Fatalf("v3 retry: corr=%d err=%v code=%d", corr, err, resp.ErrorCode)
	}
}

func TestUnknownKeyClosesConnection(t *testing.T) {
	c := dial(t, testServer(t, DefaultConfig()))
	frame := []byte{0, 0, 0, 10, 0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff} // key 9999
	c.Write(frame)
	expectClosed(t, c)
}

func TestUnsupportedVersionClosesConnection(t *testing.T) {
	c := dial(t, testServer(t, DefaultConfig()))
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(13)
	send(t, c, req, 1)
	expectClosed(t, c)
}

func TestOversizeFrameClosedBeforeAllocation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRequestBytes = 1024
	addr := testServer(t, cfg)
	for _, size := range []uint32{1025, 0x7fffffff, 0x80000000, 0xffffffff, 0} {
		c := dial(t, addr)
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], size)
		c.Write(b[:])
		expectClosed(t, c)
	}
}

func TestMalformedBodyClosesConnection(t *testing.T) {
	c := dial(t, testServer(t, DefaultConfig()))
	// Metadata v1 header with a topic array claiming 1000 entries and no data.
	frame := []byte{0, 3, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 3, 0xe8}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
	c.Write(append(out, frame...))
	expectClosed(t, c)
}

func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	addr := testServer(t, DefaultConfig())
	good := dial(t, addr)
	bad := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	name := "panic"
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
	send(t, bad, req, 1)
	expectClosed(t, bad)

	req.Topics = nil
	send(t, good, req, 2)
	if corr, _ := recv(t, good, true); corr != 2 {
		t.Fatalf("correlation %d, want 2", corr)
	}
}

func TestResponsesInRequestOrder(t *testing.T) {
	c := dial(t, testServer(t, DefaultConfig()))
	for i := int32(0); i < 50; i++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(int16(i % 5))
		send(t, c, req, i)
	}
	for i := int32(0); i < 50; i++ {
		if corr, _ := recv(t, c, false); corr != i {
			t.Fatalf("response %d has correlation %d", i, corr)
		}
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 50 * time.Millisecond
	c := dial(t, testServer(t, cfg))
	expectClosed(t, c)
}

func TestShutdownFinishesInFlightAndClosesIdle(t *testing.T) {
	reg := NewRegistry()
	entered, release := make(chan struct{}), make(chan struct{})
	reg.Register(18, 0, 4, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		close(entered)
		<-release
		return reg.ApiVersionsResponse(req.Version, 0), nil
	})
	srv := NewServer(DefaultConfig(), reg, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	busy := dial(t, ln.Addr().String())
	idle := dial(t, ln.Addr().String())
	req := kmsg.NewPtrApiVersionsRequest()
	send(t, busy, req, 42)
	<-entered // the request is in flight when the shutdown begins
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	expectClosed(t, idle)
	close(release)
	if corr, _ := recv(t, busy, false); corr != 42 {
		t.Fatalf("in-flight response correlation %d", corr)
	}
	expectClosed(t, busy)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

package protocol

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncBuffer (listener_test.go) collects log lines written from the
// server's goroutines.

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		m := map[string]any{}
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func TestHandlersLogWithTheConnectionAndClientID(t *testing.T) {
	var logs syncBuffer
	reg := NewRegistry()
	logged := make(chan struct{}, 2)
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		req.Logger().Info().Msg("handled")
		logged <- struct{}{}
		return reg.ApiVersionsResponse(req.Version, 0), nil
	})
	srv := NewServer(DefaultConfig(), reg, zerolog.New(&logs))
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
	for i, id := range []string{"app-a", "app-b"} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		b := kmsg.NewRequestFormatter(kmsg.FormatterClientID(id)).AppendRequest(nil, req, int32(i))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		recv(t, c, false)
		<-logged
	}

	var handled []map[string]any
	for _, l := range logs.lines() {
		if l["message"] == "handled" {
			handled = append(handled, l)
		}
	}
	if len(handled) != 2 {
		t.Fatalf("got %d handler lines, want 2: %v", len(handled), logs.lines())
	}
	for i, id := range []string{"app-a", "app-b"} {
		l := handled[i]
		if l["client_id"] != id || l["remote"] != c.LocalAddr().String() || l["conn"] == nil {
			t.Errorf("line %d = %v, want conn, remote %s and client_id %s", i, l, c.LocalAddr(), id)
		}
	}
}

func TestRequestOutsideAConnectionLogsNowhere(t *testing.T) {
	(&Request{}).Logger().Info().Msg("dropped")
}

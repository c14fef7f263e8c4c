package protocol

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listenerServer serves ApiVersions and Metadata on a listener named
// CLIENT that does not expose Metadata.
func listenerServer(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return reg.ApiVersionsResponseOn(req.Conn, req.Version, 0), nil
	})
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.(*kmsg.MetadataRequest).ResponseKind(), nil
	})
	srv := NewServer(DefaultConfig(), reg, zerolog.New(logs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeListener(ln, ListenerConfig{Name: "CLIENT", Exposes: func(k int16) bool { return k != 3 }})
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

func TestListenerClosesConnectionForAnAPIItDoesNotExpose(t *testing.T) {
	var logs syncBuffer
	c := dial(t, listenerServer(t, &logs))
	send(t, c, kmsg.NewPtrMetadataRequest(), 1)
	expectClosed(t, c)
	// The log names the client: its address and its client id.
	local := c.LocalAddr().String()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := logs.String()
		if strings.Contains(out, "does not expose") && strings.Contains(out, local) && strings.Contains(out, `"client_id":"test"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line naming client %s: %s", local, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestApiVersionsListsOnlyTheListenersAPIs(t *testing.T) {
	var logs syncBuffer
	c := dial(t, listenerServer(t, &logs))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	send(t, c, req, 1)
	_, body := recv(t, c, false)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 {
		t.Fatalf("ApiVersions lists %+v, want only ApiVersions", resp.ApiKeys)
	}
	// And the KIP-511 answer to an unknown ApiVersions version too.
	req.SetVersion(9999)
	send(t, c, req, 2)
	_, body = recv(t, c, false)
	resp = kmsg.NewPtrApiVersionsResponse()
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 {
		t.Fatalf("ApiVersions v0 fallback lists %+v", resp.ApiKeys)
	}
}

package protocol

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/tlsconf"
)

// testPKI is a CA with a server and a client certificate, and stores for
// each side.
type testPKI struct {
	dir            string
	server, client *tlsconf.Store
}

func newTestPKI(t testing.TB, serverProps map[string]string) *testPKI {
	t.Helper()
	dir := t.TempDir()
	if _, err := tlsconf.GenerateDir(dir, []string{"server", "client"}, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	store := func(props map[string]string) *tlsconf.Store {
		c, err := tlsconf.Parse(props)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tlsconf.New(c, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sp := map[string]string{"ssl.keystore.location": filepath.Join(dir, "server.pem"), "ssl.truststore.location": filepath.Join(dir, "ca.pem")}
	for k, v := range serverProps {
		sp[k] = v
	}
	return &testPKI{
		dir:    dir,
		server: store(sp),
		client: store(map[string]string{"ssl.keystore.location": filepath.Join(dir, "client.pem"), "ssl.truststore.location": filepath.Join(dir, "ca.pem")}),
	}
}

// tlsPair returns the two ends of a TLS connection over loopback TCP,
// handshaken.
func tlsPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	p := newTestPKI(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := p.server.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, c := tls.Server(c2, sc), tls.Client(c1, p.client.ClientConfig(ln.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- s.Handshake() }()
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return s, c
}

// tlsServer serves ApiVersions on an SSL listener; the handler records
// the principal of each connection it serves.
func tlsServer(t *testing.T, p *testPKI, logs *syncBuffer, principals *sync.Map) string {
	return tlsServerWith(t, DefaultConfig(), p, logs, principals)
}

func tlsServerWith(t *testing.T, cfg Config, p *testPKI, logs *syncBuffer, principals *sync.Map) string {
	t.Helper()
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		principals.Store(req.Conn.RemoteAddr, req.Conn.Principal())
		return reg.ApiVersionsResponseOn(req.Conn, req.Version, 0), nil
	})
	srv := NewServer(cfg, reg, zerolog.New(logs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := p.server.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeListener(ln, ListenerConfig{Name: "SSL", SecurityProtocol: "SSL", TLS: sc, TLSPrincipal: p.server.Principal})
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

func apiVersionsOver(t *testing.T, c net.Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	send(t, c, req, 5)
	if corr, _ := recv(t, c, false); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
}

func TestSSLListenerSetsThePrincipalOfTheClientCertificate(t *testing.T) {
	p := newTestPKI(t, map[string]string{"ssl.client.auth": "required"})
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServer(t, p, &logs, &principals)
	c := dial(t, addr)
	tc := tls.Client(c, p.client.ClientConfig(addr))
	apiVersionsOver(t, tc)
	got, _ := principals.Load(c.LocalAddr().String())
	if got != (Principal{Type: "User", Name: "CN=client"}) {
		t.Fatalf("principal %v, want User:CN=client", got)
	}
}

func TestSSLListenerWithoutClientCertificateIsAnonymous(t *testing.T) {
	p := newTestPKI(t, nil)
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServer(t, p, &logs, &principals)
	c := dial(t, addr)
	cc := p.client.ClientConfig(addr)
	cc.GetClientCertificate = nil
	apiVersionsOver(t, tls.Client(c, cc))
	if got, _ := principals.Load(c.LocalAddr().String()); got != Anonymous {
		t.Fatalf("principal %v, want User:ANONYMOUS", got)
	}
}

func TestPlaintextClientOnTLSListenerIsClosedAndNamed(t *testing.T) {
	p := newTestPKI(t, nil)
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServer(t, p, &logs, &principals)
	plain := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	send(t, plain, req, 1)
	// The server answers the bytes it read as a ClientHello with a TLS
	// alert at most, then closes: never a Kafka response.
	plain.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	var n int
	for {
		m, err := plain.Read(buf[n:])
		n += m
		if err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("the plaintext connection was left open")
			}
			break
		}
	}
	if n > 0 && buf[0] != 0x15 { // a TLS alert record
		t.Fatalf("got %d bytes that are not a TLS alert: %x", n, buf[:n])
	}
	local := plain.LocalAddr().String()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "TLS handshake with "+local+" failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line naming %s: %s", local, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The listener keeps serving TLS clients.
	c := dial(t, addr)
	apiVersionsOver(t, tls.Client(c, p.client.ClientConfig(addr)))
}

func TestTLSHandshakeTimesOutForASilentClient(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TLSHandshakeTimeout = 200 * time.Millisecond
	p := newTestPKI(t, nil)
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServerWith(t, cfg, p, &logs, &principals)
	silent := dial(t, addr)
	expectClosed(t, silent)
}

// Kafka fails the authentication of a client whose certificate no
// ssl.principal.mapping.rules rule matches.
func TestSSLListenerClosesConnectionWhoseCertificateMatchesNoRule(t *testing.T) {
	p := newTestPKI(t, map[string]string{"ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=admin$/admin/"})
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServer(t, p, &logs, &principals)
	c := dial(t, addr)
	tc := tls.Client(c, p.client.ClientConfig(addr))
	req := kmsg.NewPtrApiVersionsRequest()
	send(t, tc, req, 1)
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a certificate no rule maps was served")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "maps to no principal") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := principals.Load(c.LocalAddr().String()); ok {
		t.Fatal("the request was served")
	}
}

// A peer client (replica fetcher, controller client) over TLS presents
// its keystore and verifies the server against its truststore.
func TestPeerClientOverTLS(t *testing.T) {
	p := newTestPKI(t, map[string]string{"ssl.client.auth": "required"})
	var logs syncBuffer
	var principals sync.Map
	addr := tlsServer(t, p, &logs, &principals)
	cl := NewTLSClient(addr, "peer", 5*time.Second, p.client.ClientConfig)
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	if _, err := cl.Request(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got Principal
	principals.Range(func(_, v any) bool { got = v.(Principal); return false })
	if got.Name != "CN=client" {
		t.Fatalf("the server saw %v, want the peer's certificate", got)
	}
	// A peer that does not trust the server's CA does not talk to it.
	other := newTestPKI(t, nil)
	bad := NewTLSClient(addr, "peer", 5*time.Second, other.client.ClientConfig)
	defer bad.Close()
	if _, err := bad.Request(context.Background(), req); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("a server of an untrusted CA: %v", err)
	}
}

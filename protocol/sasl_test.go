package protocol

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gokafka/gokafka/sasl"
)

// fakeClock is the SASL layer's clock in these tests.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	return c
}
func (c *fakeClock) unix(d time.Duration) int64 { return c.now().Add(d).Unix() }

type saslServer struct {
	addr  string
	logs  *syncBuffer
	clock *fakeClock
	mu    sync.Mutex
	seen  []string // principals Metadata was served to
}

// saslTestServer serves ApiVersions and Metadata v0-12 on a SASL listener
// offering PLAIN (alice/alice-secret, bob/bob-secret) and OAUTHBEARER,
// with connections.max.reauth.ms of maxReauth.
func saslTestServer(t *testing.T, maxReauth time.Duration, opts ...func(*sasl.ServerConfig)) *saslServer {
	t.Helper()
	s := &saslServer{logs: &syncBuffer{}, clock: newFakeClock()}
	reg := NewRegistry()
	reg.Register(18, 0, 4, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return reg.ApiVersionsResponseOn(req.Conn, req.Version, 0), nil
	})
	reg.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		s.mu.Lock()
		s.seen = append(s.seen, req.Conn.Principal().String())
		s.mu.Unlock()
		return req.Body.(*kmsg.MetadataRequest).ResponseKind(), nil
	})
	// What the handlers answer outside an exchange.
	reg.Register(17, 0, 1, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	})
	cfg := &sasl.ServerConfig{
		Mechanisms: []string{"PLAIN", "OAUTHBEARER"},
		PlainUsers: map[string]string{"alice": "alice-secret", "bob": "bob-secret"},
		OAuth:      &sasl.OAuthConfig{},
		MaxReauth:  map[string]time.Duration{"": maxReauth},
		Now:        s.clock.now,
	}
	for _, o := range opts {
		o(cfg)
	}
	srv := NewServer(DefaultConfig(), reg, zerolog.New(s.logs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeListener(ln, ListenerConfig{Name: "SASL_PLAINTEXT", SecurityProtocol: "SASL_PLAINTEXT", SASL: cfg})
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	s.addr = ln.Addr().String()
	return s
}

func (s *saslServer) principals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func handshake(t *testing.T, c net.Conn, version int16, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mech
	send(t, c, req, 1)
	_, body := recv(t, c, false)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func authenticate(t *testing.T, c net.Conn, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = token
	send(t, c, req, 2)
	_, body := recv(t, c, true)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.SetVersion(2)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

func metadataOK(t *testing.T, c net.Conn) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	send(t, c, req, 3)
	if corr, _ := recv(t, c, false); corr != 3 {
		t.Fatalf("correlation id %d", corr)
	}
}

func loginPlain(t *testing.T, c net.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if hs := handshake(t, c, 1, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("handshake error %d", hs.ErrorCode)
	}
	resp := authenticate(t, c, plainToken(user, pass))
	if resp.ErrorCode != 0 {
		t.Fatalf("authenticate: error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	return resp
}

func TestSASLRequestBeforeAuthenticationClosesConnection(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	send(t, c, req, 1)
	expectClosed(t, c)
	if len(s.principals()) != 0 {
		t.Fatal("Metadata was served before authentication")
	}
	eventually(t, "the close reason logged", func() bool { return strings.Contains(s.logs.String(), "illegal_sasl_state") })
}

func TestSASLApiVersionsServedBeforeAuthentication(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	roundTrip(t, c, 7)
	loginPlain(t, c, "alice", "alice-secret")
}

func TestSASLHandshakeListsEnabledMechanismsOnSuccess(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	hs := handshake(t, c, 1, "PLAIN")
	if hs.ErrorCode != 0 || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN,OAUTHBEARER" {
		t.Fatalf("handshake: error %d mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
}

func TestSASLUnsupportedMechanismAnsweredThenClosed(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	hs := handshake(t, c, 1, "SCRAM-SHA-256")
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hs.SupportedMechanisms) != 2 {
		t.Fatalf("handshake: error %d mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	expectClosed(t, c)
}

func TestSASLPlainAuthenticatesAndSetsPrincipal(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	resp := loginPlain(t, c, "alice", "alice-secret")
	if resp.SessionLifetimeMillis != 0 {
		t.Fatalf("session lifetime %d without connections.max.reauth.ms", resp.SessionLifetimeMillis)
	}
	metadataOK(t, c)
	if got := s.principals(); len(got) != 1 || got[0] != "User:alice" {
		t.Fatalf("principals %v", got)
	}
}

func TestSASLWrongPasswordRefusedWithKafkasMessageAndLogged(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	handshake(t, c, 1, "PLAIN")
	resp := authenticate(t, c, plainToken("alice", "nope"))
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	expectClosed(t, c)
	if !strings.Contains(s.logs.String(), "failed authentication") || !strings.Contains(s.logs.String(), "wrong password for user alice") {
		t.Fatalf("failure not logged:\n%s", s.logs)
	}
	// Others are still served.
	c2 := dial(t, s.addr)
	loginPlain(t, c2, "bob", "bob-secret")
	metadataOK(t, c2)
}

func TestSASLHandshakeV0TakesRawTokens(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	if hs := handshake(t, c, 0, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("handshake error %d", hs.ErrorCode)
	}
	tok := plainToken("alice", "alice-secret")
	b := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	if _, err := c.Write(append(b, tok...)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
		t.Fatalf("raw PLAIN reply: size %v err %v", size, err)
	}
	metadataOK(t, c)
	if got := s.principals(); len(got) != 1 || got[0] != "User:alice" {
		t.Fatalf("principals %v", got)
	}
}

func TestSASLRawTokenFailureClosesConnectionAndNamesTheClient(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	handshake(t, c, 0, "PLAIN")
	tok := plainToken("alice", "wrong")
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	eventually(t, "the failure logged with the client id", func() bool {
		return strings.Contains(s.logs.String(), `"client_id":"test"`) && strings.Contains(s.logs.String(), "failed authentication")
	})
}

func TestSASLSessionLifetimeTellsClientAndExpiredSessionIsClosed(t *testing.T) {
	s := saslTestServer(t, 10*time.Second)
	c := dial(t, s.addr)
	resp := loginPlain(t, c, "alice", "alice-secret")
	if resp.SessionLifetimeMillis != 10000 {
		t.Fatalf("session lifetime %d, want 10000", resp.SessionLifetimeMillis)
	}
	metadataOK(t, c)
	s.clock.advance(10 * time.Second)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	send(t, c, req, 9)
	expectClosed(t, c)
	eventually(t, "the close reason logged", func() bool { return strings.Contains(s.logs.String(), "session_expired") })
}

func TestSASLReauthenticationExtendsTheSession(t *testing.T) {
	s := saslTestServer(t, 10*time.Second)
	c := dial(t, s.addr)
	loginPlain(t, c, "alice", "alice-secret")
	s.clock.advance(8 * time.Second)
	loginPlain(t, c, "alice", "alice-secret")
	s.clock.advance(8 * time.Second) // 16s after the first login
	metadataOK(t, c)
}

func TestSASLReauthenticationCannotChangePrincipal(t *testing.T) {
	s := saslTestServer(t, 10*time.Second)
	c := dial(t, s.addr)
	loginPlain(t, c, "alice", "alice-secret")
	handshake(t, c, 1, "PLAIN")
	resp := authenticate(t, c, plainToken("bob", "bob-secret"))
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
		t.Fatalf("error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	expectClosed(t, c)
}

func TestSASLHandshakeAfterAuthenticationWithoutLifetimeIsIllegal(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	loginPlain(t, c, "alice", "alice-secret")
	if hs := handshake(t, c, 1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake error %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
	}
}

func TestSASLOAuthLifetimeIsTheTokensAndExpiredTokenFailsWithInvalidToken(t *testing.T) {
	s := saslTestServer(t, 0)
	token := func(exp int64) []byte {
		return []byte("n,,\x01auth=Bearer " + unsecuredJWS(`{"sub":"carol","exp":`+itoa(exp)+`}`) + "\x01\x01")
	}
	c := dial(t, s.addr)
	handshake(t, c, 1, "OAUTHBEARER")
	resp := authenticate(t, c, token(s.clock.unix(time.Hour)))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != time.Hour.Milliseconds() {
		t.Fatalf("error %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}

	c2 := dial(t, s.addr)
	handshake(t, c2, 1, "OAUTHBEARER")
	resp = authenticate(t, c2, token(s.clock.unix(-time.Minute)))
	if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("error challenge: code %d bytes %q", resp.ErrorCode, resp.SASLAuthBytes)
	}
	resp = authenticate(t, c2, []byte{1})
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "invalid_token") {
		t.Fatalf("error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	expectClosed(t, c2)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func unsecuredJWS(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func TestSASLFrameLargerThanMaxReceiveSizeBeforeAuthenticationCloses(t *testing.T) {
	s := saslTestServer(t, 0)
	c := dial(t, s.addr)
	// Only the size prefix: the broker must not wait for the bytes.
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, 524289)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	eventually(t, "the close reason logged", func() bool { return strings.Contains(s.logs.String(), "sasl.server.max.receive.size") })
}

func TestClientAuthenticatesEachConnectionWithSASL(t *testing.T) {
	s := saslTestServer(t, 0)
	cl := NewClient(s.addr, "peer", 5*time.Second)
	defer cl.Close()
	cl.SetSASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	if _, err := cl.Request(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := s.principals(); len(got) != 1 || got[0] != "User:alice" {
		t.Fatalf("principals %v", got)
	}

	bad := NewClient(s.addr, "peer", 5*time.Second)
	defer bad.Close()
	bad.SetSASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())
	if _, err := bad.Request(context.Background(), req); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestSASLFailedAuthenticationAnswerIsHeldBack(t *testing.T) {
	s := saslTestServer(t, 0, func(c *sasl.ServerConfig) { c.FailedAuthenticationDelay = time.Hour })
	c := dial(t, s.addr)
	handshake(t, c, 1, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = plainToken("alice", "guess")
	send(t, c, req, 2)
	// The guesser hears nothing for connection.failed.authentication.delay.ms...
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	if n, err := c.Read(b[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answer not held back: n=%d err=%v", n, err)
	}
	// ...while everyone else is served.
	c2 := dial(t, s.addr)
	loginPlain(t, c2, "bob", "bob-secret")
	metadataOK(t, c2)
}

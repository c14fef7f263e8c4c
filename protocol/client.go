package protocol

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// Client is a minimal Kafka-protocol client for broker-to-broker calls
// (follower fetches, controller RPCs). It keeps one connection, sends one
// request at a time at the version the caller set, and redials after any
// error. Versions are the caller's choice: both ends are gokafka.
type Client struct {
	addr     string
	clientID string
	timeout  time.Duration
	// routes say where to dial addr; set before the first request.
	routes PeerRoutes

	// tls, when set, makes every connection TLS with the config it
	// returns for addr.
	tls PeerTLS

	mu   sync.Mutex
	conn net.Conn
	corr int32
	// reuse, when set, reads every response into buf, so a response's
	// byte fields stay valid only until the next request.
	reuse bool
	buf   []byte
	// formatter encodes requests with the client id; out is the encoded
	// request, kept for the next one (it is written before exchange
	// returns), and size the response's length prefix.
	formatter *kmsg.RequestFormatter
	out       []byte
	size      [4]byte
	// auth, when set, authenticates every new connection (a peer's SASL
	// listener); reauthAt is when the current connection's session
	// must be renewed (zero: never).
	auth     kgosasl.Mechanism
	reauthAt time.Time
}

// SetSASL makes the client authenticate each connection it opens with m,
// as a broker does toward a peer's SASL_PLAINTEXT or SASL_SSL
// inter-broker listener (sasl.mechanism.inter.broker.protocol). A
// session with a lifetime (KIP-368) is renewed by reconnecting shortly
// before it ends.
func (c *Client) SetSASL(m kgosasl.Mechanism) {
	c.mu.Lock()
	c.auth = m
	c.mu.Unlock()
}

// ReuseResponseBuffer makes the client read each response into one
// buffer kept across requests instead of a fresh allocation. The byte
// fields of a response (a fetch's records) alias that buffer and are
// overwritten by the next request, so only a caller that is done with a
// response before it sends the next may set this: a replica fetcher,
// which appends the records and forgets them.
func (c *Client) ReuseResponseBuffer() {
	c.mu.Lock()
	c.reuse = true
	c.mu.Unlock()
}

// NewClient returns a client for addr. timeout bounds the dial and each
// round trip beyond the context's own deadline.
func NewClient(addr, clientID string, timeout time.Duration) *Client {
	return &Client{addr: addr, clientID: clientID, timeout: timeout}
}

// PeerTLS returns the TLS config of a connection to a peer at addr, the
// address it is known by (not the one dialled, which test peer routes may
// change): the listener's keystore as client certificate, its truststore
// for the peer's. A nil PeerTLS dials plaintext.
type PeerTLS func(addr string) *tls.Config

// NewTLSClient is NewClient over TLS when peerTLS is not nil.
func NewTLSClient(addr, clientID string, timeout time.Duration, peerTLS PeerTLS) *Client {
	return &Client{addr: addr, clientID: clientID, timeout: timeout, tls: peerTLS}
}

// DialPeer connects to a peer at addr through routes, over TLS
// (handshake done) when peerTLS is set.
func DialPeer(ctx context.Context, addr string, timeout time.Duration, peerTLS PeerTLS, routes PeerRoutes) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", routes.DialAddr(addr))
	if err != nil || peerTLS == nil {
		return conn, err
	}
	tc := tls.Client(conn, peerTLS(addr))
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// Via makes the client dial addr through routes (see PeerRoutes) and
// returns it. Call it before the first request.
func (c *Client) Via(routes PeerRoutes) *Client {
	c.mu.Lock()
	c.routes = routes
	c.mu.Unlock()
	return c
}

// ClientID returns the client id the client sends.
func (c *Client) ClientID() string { return c.clientID }

// Addr returns the address the client talks to.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// Request sends req and decodes the response into a new response value.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, err := c.roundTrip(ctx, req)
	if err != nil && c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	return resp, err
}

func (c *Client) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.conn != nil && !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt) {
		c.conn.Close()
		c.conn = nil
	}
	if c.conn == nil {
		conn, err := DialPeer(ctx, c.addr, c.timeout, c.tls, c.routes)
		if err != nil {
			return nil, err
		}
		c.conn = conn
		if c.auth != nil {
			if err := c.authenticate(ctx); err != nil {
				return nil, fmt.Errorf("SASL %s authentication to %s: %w", c.auth.Name(), c.addr, err)
			}
		}
	}
	return c.exchange(ctx, req)
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 on the new
// connection.
func (c *Client) authenticate(ctx context.Context) error {
	c.reauthAt = time.Time{}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = c.auth.Name()
	r, err := c.exchange(ctx, hs)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(r.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return err
	}
	sess, msg, err := c.auth.Authenticate(ctx, c.addr)
	if err != nil {
		return err
	}
	start := time.Now()
	for {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.SetVersion(1)
		ar.SASLAuthBytes = msg
		r, err := c.exchange(ctx, ar)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return err
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			if l := resp.SessionLifetimeMillis; l > 0 {
				// Renew well before the broker would close it.
				c.reauthAt = start.Add(time.Duration(l) * time.Millisecond * 8 / 10)
			}
			return nil
		}
		msg = next
	}
}

// maxKeptRequestBuffer bounds the encoded-request buffer a client keeps
// for its next request (follower fetches and controller calls are small).
const maxKeptRequestBuffer = 64 << 10

// exchange writes req on the open connection and reads its response.
func (c *Client) exchange(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.conn
	conn.SetDeadline(deadline)
	// The callback may still run after this call returned and the caller
	// dropped c.conn, so it must hold its own reference: a deadline on a
	// closed connection is harmless, a nil one is not.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	c.corr++
	corr := c.corr
	if c.formatter == nil {
		c.formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.clientID))
	}
	buf := c.formatter.AppendRequest(c.out[:0], req, corr)
	if cap(buf) <= maxKeptRequestBuffer {
		c.out = buf
	}
	_, err := c.conn.Write(buf)
	if req.Key() == saslAuthenticateKey {
		clear(buf) // credentials do not stay in the kept buffer
	}
	if err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c.conn, c.size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(c.size[:])
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("response size %d invalid", n)
	}
	var body []byte
	if c.reuse {
		if cap(c.buf) < int(n) {
			c.buf = make([]byte, n)
		}
		body = c.buf[:n]
	} else {
		body = make([]byte, n)
	}
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

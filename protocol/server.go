package protocol

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/sasl"
)

// Config holds the connection limits.
type Config struct {
	// MaxRequestBytes is socket.request.max.bytes: a frame larger than this
	// closes the connection before anything is allocated for it.
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms: a connection with no request
	// for this long is closed.
	IdleTimeout time.Duration
	// MaxQueuedResponses bounds the encoded responses waiting for the writer.
	MaxQueuedResponses int
	// MaxQueuedResponseBytes bounds the bytes of those responses held in
	// memory (file regions a response sends do not count); a response is
	// queued while anything is left, so one larger response still goes.
	MaxQueuedResponseBytes int64

	// The limits below are described in limits.go; zero means no limit.

	// MaxConnections is max.connections, across listeners.
	MaxConnections int
	// InterBrokerListener names the listener max.connections does not
	// stop (Kafka lets inter-broker connections in at the broker-wide
	// limit; its own listener limit still applies).
	InterBrokerListener string
	// ListenerMaxConnections is listener.name.<listener>.max.connections,
	// by listener name.
	ListenerMaxConnections map[string]int
	// MaxConnectionsPerIP is max.connections.per.ip.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides, by
	// IP address.
	MaxConnectionsPerIPOverrides map[string]int
	// QueuedMaxRequests is queued.max.requests.
	QueuedMaxRequests int
	// QueuedMaxRequestBytes is queued.max.request.bytes.
	QueuedMaxRequestBytes int64
	// TLSHandshakeTimeout bounds a TLS connection's handshake (zero: 10
	// s); a client that does not complete it in time is disconnected.
	TLSHandshakeTimeout time.Duration
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxRequestBytes: 104857600, IdleTimeout: 10 * time.Minute, MaxQueuedResponses: 8, MaxQueuedResponseBytes: 64 << 20, QueuedMaxRequests: 500}
}

// CloseReason says why a connection was closed. Every close logs one.
type CloseReason int

const (
	CloseClient             CloseReason = iota // the client closed it (EOF)
	CloseReadError                             // a read failed
	CloseWriteError                            // a write failed
	CloseIdle                                  // connections.max.idle.ms passed with no request
	CloseInvalidSize                           // the size prefix was zero or negative
	CloseTooLarge                              // the size prefix exceeded socket.request.max.bytes
	CloseMalformedHeader                       // the request header could not be parsed
	CloseUnknownKey                            // no handler for the API key
	CloseUnsupportedVersion                    // the API key is served, not at this version
	CloseMalformedRequest                      // the body did not decode at its version
	CloseHandlerPanic                          // the handler panicked
	CloseHandlerError                          // the handler asked for the connection to close
	CloseShutdown                              // the server is shutting down
	CloseTooManyFromIP                         // max.connections.per.ip reached for the address
	CloseNotExposed                            // the API is not exposed on this listener
	CloseTLSHandshake                          // the TLS handshake failed (SSL and SASL_SSL listeners)
	CloseAuthentication                        // the client's certificate maps to no principal
)

var closeReasonNames = [...]string{
	"client_closed", "read_error", "write_error", "idle_timeout", "invalid_size",
	"request_too_large", "malformed_header", "unknown_api_key", "unsupported_version",
	"malformed_request", "handler_panic", "handler_error", "server_shutdown",
	"too_many_connections_from_ip",
	"api_not_exposed",
	"tls_handshake_failed",
	"authentication_failed",
}

func (r CloseReason) String() string {
	if int(r) < len(closeReasonNames) {
		return closeReasonNames[r]
	}
	if n, ok := saslCloseReasonNames[r]; ok {
		return n
	}
	return fmt.Sprintf("close_reason_%d", int(r))
}

// Server accepts connections and serves requests through a Registry.
type Server struct {
	cfg    Config
	reg    *Registry
	logger zerolog.Logger

	// baseCtx is cancelled at shutdown so that parked handlers (long-poll
	// fetches, acks=all waits) return early with what they have.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	nextID atomic.Uint64
	wg     sync.WaitGroup

	// requests and requestBytes are queued.max.requests and
	// queued.max.request.bytes (nil: no limit).
	requests, requestBytes *budget

	mu struct {
		sync.Mutex
		listeners []net.Listener
		conns     map[*conn]struct{}
		closing   bool

		// Connection counts for the limits (limits.go): accepted counts
		// connections from acceptSlot until they close.
		accepted      int
		perListener   map[string]int
		perIP         map[string]int
		acceptWaiting int // acceptors waiting for a slot
	}
	// connClosed (on mu) is signalled when a connection slot frees and at
	// shutdown.
	connClosed *sync.Cond
}

// NewServer returns a server dispatching to reg.
func NewServer(cfg Config, reg *Registry, logger zerolog.Logger) *Server {
	if cfg.MaxQueuedResponses <= 0 {
		cfg.MaxQueuedResponses = 8
	}
	if cfg.TLSHandshakeTimeout <= 0 {
		cfg.TLSHandshakeTimeout = 10 * time.Second
	}
	s := &Server{cfg: cfg, reg: reg, logger: logger}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perListener = make(map[string]int)
	s.mu.perIP = make(map[string]int)
	s.connClosed = sync.NewCond(&s.mu)
	s.requests = newBudget(int64(cfg.QueuedMaxRequests))
	s.requestBytes = newBudget(cfg.QueuedMaxRequestBytes)
	return s
}

// Serve accepts connections on ln until Shutdown, exposing every
// registered API. It returns nil after a shutdown and the accept error
// otherwise.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, ListenerConfig{})
}

// ListenerConfig names a listener and the APIs it exposes, as Kafka's
// listeners do: a request for an API the listener does not expose closes
// the connection, and ApiVersions on it does not list that API.
type ListenerConfig struct {
	// Name is the listener name (PLAINTEXT, CONTROLLER, ...); its
	// connections count against listener.name.<name>.max.connections.
	Name string
	// SecurityProtocol is the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT
	// or SASL_SSL (empty is PLAINTEXT).
	SecurityProtocol string
	// Exposes reports whether the listener serves an API key; nil exposes
	// every registered API.
	Exposes func(key int16) bool
	// SASL, set on SASL_PLAINTEXT and SASL_SSL listeners, is what their
	// connections authenticate against (sasl.go).
	SASL *sasl.ServerConfig
	// TLS, when set, makes every connection of the listener TLS (SSL and
	// SASL_SSL): the handshake runs on the connection's reader goroutine,
	// bounded by Config.TLSHandshakeTimeout, before any request is read.
	// A listener whose net.Listener already yields TLS connections (the
	// CONTROLLER listener, whose raft traffic shares the TLS layer)
	// leaves it nil.
	TLS *tls.Config
	// TLSPrincipal names the principal of a TLS connection from its
	// verified client certificate (ssl.principal.mapping.rules); ok is
	// false without one (User:ANONYMOUS). It is used on SSL listeners
	// only: on SASL_SSL the principal is the SASL identity, as in Kafka.
	TLSPrincipal func(cs *tls.ConnectionState) (name string, ok bool, err error)
}

// tlsConn is a connection carrying TLS: *tls.Conn, or a wrapper of one
// that exposes its state.
type tlsConn interface {
	ConnectionState() tls.ConnectionState
}

// ServeListener is Serve for a named listener exposing only the APIs
// lc.Exposes allows.
func (s *Server) ServeListener(ln net.Listener, lc ListenerConfig) error {
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.mu.listeners = append(s.mu.listeners, ln)
	s.mu.Unlock()

	var backoff time.Duration
	for {
		if !s.acceptSlot(lc.Name, false) {
			return nil
		}
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.mu.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				// Out of file descriptors and the like: back off rather
				// than spin, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !s.acceptSlot(lc.Name, true) {
			nc.Close()
			return nil
		}
		s.startConn(nc, lc)
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) startConn(nc net.Conn, lc ListenerConfig) {
	id := s.nextID.Add(1)
	if lc.TLS != nil {
		nc = tls.Server(nc, lc.TLS)
	}
	_, isTLS := nc.(tlsConn)
	c := &conn{
		srv: s,
		nc:  nc,
		// Over TLS the file regions of a fetch cannot go by sendfile;
		// the writer reads them in large chunks instead (splice.go),
		// which still beats copying the records into the response.
		info: &ConnInfo{ID: id, RemoteAddr: nc.RemoteAddr().String(), LocalAddr: nc.LocalAddr().String(), ZeroCopy: isTCP(nc) || isTLS,
			Listener: lc.Name, exposes: lc.Exposes, TLS: isTLS},
		out: make(chan frame, s.cfg.MaxQueuedResponses),
		lc:  lc,
	}
	c.listener, c.ip = lc.Name, hostOf(nc.RemoteAddr().String())
	c.outBytes = newBudget(s.cfg.MaxQueuedResponseBytes)
	c.parkFn = c.park
	if lc.SASL != nil {
		c.sasl = &saslConn{cfg: lc.SASL}
	}
	c.ctx, c.cancel = context.WithCancel(s.baseCtx)

	s.mu.Lock()
	if s.mu.closing {
		s.releaseSlotLocked(lc.Name)
		s.mu.Unlock()
		nc.Close()
		return
	}
	if lim := s.ipLimit(c.ip); lim > 0 && s.mu.perIP[c.ip] >= lim {
		// Kafka's ConnectionQuotas: accepted, then closed with a log line.
		s.releaseSlotLocked(lc.Name)
		s.mu.Unlock()
		nc.Close()
		c.log().Warn().Str("reason", CloseTooManyFromIP.String()).Str("listener", lc.Name).Int("max_connections_per_ip", lim).
			Msgf("rejected connection from %s: the address already has the configured maximum of %d connections", c.ip, lim)
		return
	}
	s.mu.perIP[c.ip]++
	s.mu.conns[c] = struct{}{}
	// One for the reader, one for the writer side, which the writer
	// that finishes the connection gives back (writeLoop).
	s.wg.Add(2)
	s.mu.Unlock()

	go c.readLoop()
}

// Shutdown stops accepting, lets every connection finish the request it is
// serving and send its response, then closes the connections. Parked
// handlers see their context cancelled. It returns when all connections are
// closed or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closing = true
	s.connClosed.Broadcast()
	for _, ln := range s.mu.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancelBase()
	for _, c := range conns {
		c.beginShutdown()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, c := range conns {
			c.nc.Close()
		}
		return ctx.Err()
	}
}

type conn struct {
	srv    *Server
	nc     net.Conn
	lc     ListenerConfig
	info   *ConnInfo
	ctx    context.Context
	cancel context.CancelFunc

	// logMu guards the loggers below: the reader, the writer and a
	// handler's own goroutines (through Request.Logger) may all log at
	// once.
	logMu sync.Mutex
	// logger is the server's logger with the connection's fields, built
	// by log on first use: most connections never log, and each logger
	// with fields holds a buffer of its own (about half a kilobyte).
	logger *zerolog.Logger
	// reqLogger is logger with the client id of reqLoggerClient, built
	// again only when a request brings another client id.
	reqLogger       *zerolog.Logger
	reqLoggerClient string

	// listener and ip are what the connection counts against
	// (limits.go).
	listener, ip string

	// out carries encoded responses to the writer in request order. The
	// reader closes it when it stops; the writer then drains it and closes
	// the socket.
	out chan frame
	// The writer goroutine runs only while out holds something (or is
	// closed and not yet drained): a connection waiting for its next
	// request keeps one goroutine, its reader, not two. writing (under
	// writeMu) says one runs; kickWriter starts one after each send on
	// out, and a writer that finds out empty clears it under the same
	// lock, so exactly one runs whenever out is not empty.
	writeMu sync.Mutex
	writing bool
	// writeFailed is set once a write failed: the frames left are
	// dropped. Only the running writer touches it.
	writeFailed bool

	// busy is set while a request is being read or served, so that a
	// shutdown does not cut a request in the middle.
	busy     atomic.Bool
	stopping atomic.Bool

	// throttle is the mute the last request's handler asked for, and
	// throttleAfter whether it starts after its response is queued.
	throttle      time.Duration
	throttleAfter bool

	closeOnce sync.Once
	reason    CloseReason
	reasonErr error

	// parked is set once the request being served has given back its
	// queued.max.requests slot (park), so that it is given back once; the
	// reader clears it before each request. parkFn is c.park, made once
	// per connection so that requests do not each allocate it.
	parked atomic.Bool
	parkFn func()
	// outBytes bounds the bytes of responses queued for the writer
	// (MaxQueuedResponseBytes).
	outBytes *budget
	// sasl is the authentication state on a SASL listener, nil on others.
	sasl *saslConn
}

func (c *conn) setReason(r CloseReason, err error) {
	c.closeOnce.Do(func() { c.reason, c.reasonErr = r, err })
}

func (c *conn) beginShutdown() {
	c.stopping.Store(true)
	if !c.busy.Load() {
		// Unblock a reader waiting for the next request.
		c.nc.SetReadDeadline(time.Now())
	}
}

// log is the connection's logger, with its conn, remote and listener
// fields, built on first use.
func (c *conn) log() *zerolog.Logger {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.logLocked()
}

func (c *conn) logLocked() *zerolog.Logger {
	if c.logger == nil {
		lg := c.srv.logger.With().Uint64("conn", c.info.ID).Str("remote", c.info.RemoteAddr)
		if c.listener != "" {
			lg = lg.Str("listener", c.listener)
		}
		l := lg.Logger()
		c.logger = &l
	}
	return c.logger
}

func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer func() {
		close(c.out)
		// The writer drains what is left and closes the connection.
		c.kickWriter()
	}()
	defer c.cancel()

	if !c.secure() {
		return
	}
	var sizeBuf [4]byte
	for {
		if c.srv.cfg.IdleTimeout > 0 {
			c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		} else {
			c.nc.SetReadDeadline(time.Time{})
		}
		// Checked after the deadline is set: beginShutdown stores stopping
		// before it moves the deadline, so one of the two sees the other.
		if c.stopping.Load() {
			c.setReason(CloseShutdown, nil)
			return
		}
		if _, err := io.ReadFull(c.nc, sizeBuf[:]); err != nil {
			c.readFailed(err)
			return
		}
		c.busy.Store(true)
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size <= 0 {
			c.setReason(CloseInvalidSize, fmt.Errorf("size %d", size))
			return
		}
		if size > c.srv.cfg.MaxRequestBytes {
			c.setReason(CloseTooLarge, fmt.Errorf("size %d exceeds socket.request.max.bytes %d", size, c.srv.cfg.MaxRequestBytes))
			return
		}
		if c.sasl != nil && c.sasl.stage != saslDone && size > c.sasl.cfg.ReceiveLimit() {
			// Kafka's sasl.server.max.receive.size: an unauthenticated
			// client cannot make the broker hold a large frame.
			c.setReason(CloseTooLarge, fmt.Errorf("size %d before authentication exceeds sasl.server.max.receive.size %d", size, c.sasl.cfg.ReceiveLimit()))
			return
		}
		if !c.srv.requestBytes.take(c.ctx, int64(size)) {
			c.setReason(CloseShutdown, nil)
			return
		}
		buf, err := readRequest(c.nc, size)
		if err != nil {
			c.srv.requestBytes.give(int64(size))
			c.readFailed(err)
			return
		}
		if !c.srv.requests.take(c.ctx, 1) {
			c.srv.requestBytes.give(int64(size))
			c.setReason(CloseShutdown, nil)
			return
		}
		c.parked.Store(false)
		resp, ok, closeAfter := c.serveFrame(buf)
		c.park()
		putRequestBuf(buf)
		c.srv.requestBytes.give(int64(size))
		if !ok {
			return
		}
		if c.throttle > 0 && !c.throttleAfter && !c.mute(c.throttle) {
			// A client older than KIP-219 gets its response only once the
			// throttle time has passed.
			resp.close()
			c.setReason(CloseShutdown, nil)
			return
		}
		if resp.b != nil || resp.pieces != nil {
			// The bytes of queued responses are bounded too, not only
			// their number (limits.go).
			resp.held = resp.memBytes()
			if !c.outBytes.take(c.ctx, resp.held) {
				resp.close()
				c.setReason(CloseShutdown, nil)
				return
			}
			select {
			case c.out <- resp:
			case <-c.srv.baseCtx.Done():
				// The writer may be stuck on a dead client; still try to
				// hand over the response, bounded by the queue.
				select {
				case c.out <- resp:
				default:
					resp.close()
					c.setReason(CloseShutdown, nil)
					return
				}
			}
			c.kickWriter()
		}
		if closeAfter {
			// The reason is set; the writer sends the response first.
			return
		}
		if c.throttle > 0 && c.throttleAfter && !c.mute(c.throttle) {
			c.setReason(CloseShutdown, nil)
			return
		}
		c.busy.Store(false)
	}
}

// secure completes a TLS connection's handshake and, on an SSL listener,
// sets the principal of its client certificate. It returns false when the
// connection must close; a plaintext connection returns true at once.
func (c *conn) secure() bool {
	tc, ok := c.nc.(tlsConn)
	if !ok {
		return true
	}
	if hs, ok := c.nc.(*tls.Conn); ok {
		c.nc.SetDeadline(time.Now().Add(c.srv.cfg.TLSHandshakeTimeout))
		// Checked after the deadline is set, as in readLoop.
		if c.stopping.Load() {
			c.setReason(CloseShutdown, nil)
			return false
		}
		err := hs.HandshakeContext(c.ctx)
		c.nc.SetDeadline(time.Time{})
		if err != nil {
			if c.stopping.Load() {
				c.setReason(CloseShutdown, nil)
				return false
			}
			// Named, so an operator can find a plaintext client on a TLS
			// port or a client whose certificate is not trusted. A
			// connection closed before its first byte (a port probe) is
			// not worth a warning.
			ev := c.log().Warn()
			if errors.Is(err, io.EOF) {
				ev = c.log().Debug()
			}
			ev.Err(err).Msgf("TLS handshake with %s failed; closing the connection", c.info.RemoteAddr)
			c.setReason(CloseTLSHandshake, err)
			return false
		}
	}
	if c.lc.SecurityProtocol != "SSL" || c.lc.TLSPrincipal == nil {
		return true
	}
	cs := tc.ConnectionState()
	name, ok, err := c.lc.TLSPrincipal(&cs)
	if err != nil {
		c.log().Warn().Err(err).Msgf("client certificate of %s maps to no principal; closing the connection", c.info.RemoteAddr)
		c.setReason(CloseAuthentication, err)
		return false
	}
	if ok {
		c.info.SetPrincipal(Principal{Type: "User", Name: name})
		c.logMu.Lock()
		l := c.logLocked().With().Str("principal", "User:"+name).Logger()
		c.logger = &l
		c.logMu.Unlock()
		l.Debug().Msg("authenticated by TLS client certificate")
	}
	return true
}

// mute keeps the connection from reading its next request for d, as
// Kafka mutes a throttled channel. It returns false if the connection is
// being closed meanwhile.
func (c *conn) mute(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, io.EOF):
		c.setReason(CloseClient, nil)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.stopping.Load() {
			c.setReason(CloseShutdown, nil)
		} else {
			c.setReason(CloseIdle, nil)
		}
	default:
		c.setReason(CloseReadError, err)
	}
}

// park gives back the queued.max.requests slot of the request being
// served (Request.Park), at most once per request.
func (c *conn) park() {
	if !c.parked.Swap(true) {
		c.srv.requests.give(1)
	}
}

// serveFrame serves one frame: through the SASL layer first on a SASL
// listener. closeAfter asks for the connection to close once the
// response is sent.
func (c *conn) serveFrame(in []byte) (out frame, ok, closeAfter bool) {
	if c.sasl != nil {
		c.throttle = 0
		f, act := c.serveSASL(in)
		if c.sasl.failed && c.sasl.cfg.FailedAuthenticationDelay > 0 {
			// connection.failed.authentication.delay.ms, as Kafka
			// delays the answer and the close; a shutdown cuts it short.
			c.mute(c.sasl.cfg.FailedAuthenticationDelay)
		}
		switch act {
		case saslReply:
			return f, true, false
		case saslReplyClose:
			return f, true, true
		case saslClose:
			return frame{}, false, false
		}
	}
	out, ok = c.serve(in)
	return out, ok, false
}

// serve decodes and handles one frame. It returns the encoded response
// (an empty frame when none is due) and false when the connection must
// close. Nothing keeps a Produce frame once it returns (see putRequestBuf).
func (c *conn) serve(in []byte) (out frame, ok bool) {
	c.throttle = 0
	h, err := parseHeaderPrefix(in)
	if err != nil {
		c.setReason(CloseMalformedHeader, err)
		return frame{}, false
	}
	entry, known := c.srv.reg.lookup(h.key)
	if !known {
		c.setReason(CloseUnknownKey, fmt.Errorf("api key %d", h.key))
		return frame{}, false
	}
	if h.version < entry.min || h.version > entry.max {
		if h.key == apiVersionsKey {
			// KIP-511: answer in a v0 body with our ranges so the client
			// can retry at a version we list; the body is not parsed as
			// its layout at this version is unknown.
			c.log().Debug().Int16("version", h.version).Msg("ApiVersions at unsupported version")
			resp := c.srv.reg.ApiVersionsResponseOn(c.info, 0, 35)
			return frame{b: encodeResponse(h, resp)}, true
		}
		c.setReason(CloseUnsupportedVersion, fmt.Errorf("api %s (%d) version %d", kmsg.NameForKey(h.key), h.key, h.version))
		return frame{}, false
	}
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	body, err := parseHeaderRest(&h, in, req.IsFlexible())
	if err != nil {
		c.setReason(CloseMalformedHeader, err)
		return frame{}, false
	}
	if !c.info.Exposes(h.key) {
		// Kafka closes the connection for an API its listener does not
		// expose; the client is named so an operator can find it.
		c.log().Warn().Str("client_id", h.clientID).Str("api", kmsg.NameForKey(h.key)).Int16("version", h.version).
			Msg("request for an API this listener does not expose; closing the connection")
		c.setReason(CloseNotExposed, fmt.Errorf("api %s (%d) is not exposed on listener %q", kmsg.NameForKey(h.key), h.key, c.info.Listener))
		return frame{}, false
	}
	if err := req.ReadFrom(body); err != nil {
		c.setReason(CloseMalformedRequest, fmt.Errorf("api %s v%d: %w", kmsg.NameForKey(h.key), h.version, err))
		return frame{}, false
	}

	preq := &Request{
		Key: h.key, Version: h.version, CorrelationID: h.correlationID,
		ClientID: h.clientID, Body: req, Conn: c.info, Size: len(in), park: c.parkFn,
		conn: c,
	}
	resp, err, panicked := c.callHandler(entry.fn, preq)
	c.throttle, c.throttleAfter = preq.Throttle, throttleAfterResponse(resp, h.version)
	if panicked {
		c.setReason(CloseHandlerPanic, err)
		return frame{}, false
	}
	if err != nil {
		if sr, ok := resp.(*SplicedResponse); ok {
			sr.Close()
		}
		c.setReason(CloseHandlerError, err)
		return frame{}, false
	}
	if resp == nil {
		return frame{}, true
	}
	resp.SetVersion(h.version)
	if sr, ok := resp.(*SplicedResponse); ok {
		f, err := splice(encodeResponse(h, sr), sr.IsFlexible(), sr)
		if err != nil {
			sr.Close()
			c.setReason(CloseHandlerError, err)
			return frame{}, false
		}
		return f, true
	}
	return frame{b: encodeResponse(h, resp)}, true
}

// throttleAfterResponse reports whether the client of resp throttles
// itself after reading it (KIP-219), so that the response goes out first
// and the connection is muted after; older versions get the response
// late instead. A request without a response (acks=0) is muted after.
func throttleAfterResponse(resp kmsg.Response, version int16) bool {
	if sr, ok := resp.(*SplicedResponse); ok {
		resp = sr.Response
	}
	if resp == nil {
		return true
	}
	resp.SetVersion(version)
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		_, after := tr.Throttle()
		return after
	}
	return true
}

// requestLogger is the connection's logger with clientID, built when a
// request's handler first logs (Request.Logger), possibly from goroutines
// of its own while the reader serves the request.
func (c *conn) requestLogger(clientID string) *zerolog.Logger {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.reqLogger == nil || c.reqLoggerClient != clientID {
		l := c.logLocked().With().Str("client_id", clientID).Logger()
		c.reqLogger, c.reqLoggerClient = &l, clientID
	}
	return c.reqLogger
}

func (c *conn) callHandler(fn HandlerFunc, req *Request) (resp kmsg.Response, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			req.Logger().Error().Str("api", kmsg.NameForKey(req.Key)).Int16("version", req.Version).
				Interface("panic", r).Str("stack", string(debug.Stack())).Msg("handler panicked")
			resp, err, panicked = nil, fmt.Errorf("panic: %v", r), true
		}
	}()
	resp, err = fn(c.ctx, req)
	return resp, err, false
}

func encodeResponse(h header, resp kmsg.Response) []byte {
	buf := make([]byte, 4, 256)
	buf = appendResponseHeader(buf, h.key, h.correlationID, resp.IsFlexible())
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// kickWriter starts the writer unless one runs. The reader calls it after
// each send on out and after closing out.
func (c *conn) kickWriter() {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if !c.writing {
		c.writing = true
		go c.writeLoop()
	}
}

// writeLoop writes the queued responses in order and returns when out is
// empty; the reader starts it again for the next. Once out is closed and
// drained it closes the connection (finish) and gives back the
// connection's second WaitGroup count.
func (c *conn) writeLoop() {
	for {
		var f frame
		var ok bool
		select {
		case f, ok = <-c.out:
		default:
			// Checked again under writeMu: the reader sends before it
			// kicks, so a frame sent after this check finds writing
			// false and starts a writer of its own.
			c.writeMu.Lock()
			select {
			case f, ok = <-c.out:
				c.writeMu.Unlock()
			default:
				c.writing = false
				c.writeMu.Unlock()
				return
			}
		}
		if !ok {
			c.finish()
			c.srv.wg.Done()
			return
		}
		if c.writeFailed {
			f.close()
			c.outBytes.give(f.held)
			continue
		}
		// connections.max.idle.ms bounds every response's write too: a
		// client that stops reading is disconnected rather than pinning
		// its queued responses (and their files) forever.
		if c.srv.cfg.IdleTimeout > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		}
		if err := f.write(c.nc); err != nil {
			c.setReason(CloseWriteError, err)
			c.writeFailed = true
			// Unblock the reader; it will close out.
			c.nc.SetReadDeadline(time.Now())
			c.cancel()
		}
		c.outBytes.give(f.held)
	}
}

func (c *conn) finish() {
	c.nc.Close()
	c.srv.mu.Lock()
	delete(c.srv.mu.conns, c)
	if c.srv.mu.perIP[c.ip]--; c.srv.mu.perIP[c.ip] <= 0 {
		delete(c.srv.mu.perIP, c.ip)
	}
	c.srv.releaseSlotLocked(c.listener)
	c.srv.mu.Unlock()

	var ev *zerolog.Event
	switch c.reason {
	case CloseClient, CloseIdle, CloseShutdown:
		c.logMu.Lock()
		built := c.logger != nil
		c.logMu.Unlock()
		if !built {
			probe := c.srv.logger.Debug()
			if probe == nil {
				// Not logged at this level: no logger is built for it.
				return
			}
			probe.Discard()
		}
		ev = c.log().Debug()
	default:
		ev = c.log().Warn()
	}
	if c.reasonErr != nil {
		ev = ev.Err(c.reasonErr)
	}
	ev.Str("reason", c.reason.String()).Msg("connection closed")
}

func isTCP(nc net.Conn) bool {
	_, ok := nc.(*net.TCPConn)
	return ok
}

// Produce requests are most of the bytes a broker reads, and their
// records are written to the log before the handler returns; nothing of
// the request outlives serve. Their buffers are pooled so that a steady
// produce load does not allocate (and clear, and collect) a fresh frame
// per request: big frames in one pool, frames of up to requestChunk by
// size class (powers of two from pooledRequestMin), since a producer at a
// moderate rate (franz-go's default 10 ms linger) sends frames of a few
// to a few dozen kilobytes, which were most of what a broker under such
// a load allocated. Other requests may keep slices of their
// frame (group metadata, assignments), so only Produce frames go back to
// a pool; frames under pooledRequestMin (most requests other than
// Produce) are allocated to their size.
const pooledRequestMin = 1 << 10

// smallRequestClasses are the size classes pooledRequestMin,
// 2*pooledRequestMin, ..., requestChunk.
const smallRequestClasses = 7

var (
	requestBufs      = sync.Pool{New: func() any { return new([]byte) }}
	smallRequestBufs [smallRequestClasses]sync.Pool
)

// smallRequestClass is the size class of a frame of size bytes,
// pooledRequestMin <= size <= requestChunk: the smallest that holds it.
func smallRequestClass(size int) int {
	return bits.Len(uint(size-1)) - bits.Len(uint(pooledRequestMin-1))
}

// getRequestBuf returns a buffer for a frame of size bytes: a pooled one
// that already holds size, else an empty one that readRequest grows as
// the bytes arrive.
func getRequestBuf(size int32) []byte {
	if size < pooledRequestMin {
		return make([]byte, 0, size)
	}
	if size <= requestChunk {
		class := smallRequestClass(int(size))
		if bp, ok := smallRequestBufs[class].Get().(*[]byte); ok {
			return (*bp)[:0]
		}
		return make([]byte, 0, pooledRequestMin<<class)
	}
	bp := requestBufs.Get().(*[]byte)
	if cap(*bp) < int(size) {
		return make([]byte, 0, requestChunk)
	}
	return (*bp)[:0]
}

// putRequestBuf returns a Produce frame's buffer to the pool once it has
// been served.
func putRequestBuf(buf []byte) {
	if cap(buf) < pooledRequestMin || len(buf) < 2 || binary.BigEndian.Uint16(buf) != produceKey {
		return
	}
	b := buf[:0]
	if cap(b) <= requestChunk {
		// A class's buffers have exactly its size (getRequestBuf).
		if class := smallRequestClass(cap(b)); pooledRequestMin<<class == cap(b) {
			smallRequestBufs[class].Put(&b)
		}
		return
	}
	requestBufs.Put(&b)
}

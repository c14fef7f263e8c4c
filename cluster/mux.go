package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/protocol"
)

// The CONTROLLER listener carries two protocols, as Kafka's does (there
// both KRaft's raft RPCs and the broker-to-controller RPCs are Kafka
// protocol): the metadata quorum's raft traffic, in hashicorp/raft's own
// wire format, and Kafka-protocol requests for the active controller
// (BrokerRegistration, BrokerHeartbeat, AlterPartition,
// AllocateProducerIds, share-state writes and forwarded admin requests).
// Every raft connection gokafka opens starts with raftPreamble: four bytes
// that read as a negative Kafka frame size, which no Kafka client sends.
// Any other connection is Kafka protocol and goes to ControllerListener,
// which the broker serves with the controller's APIs only.
var raftPreamble = [4]byte{0xff, 'G', 'K', 'R'}

// classifyTimeout bounds how long a new connection may take to send its
// first four bytes.
const classifyTimeout = 10 * time.Second

// maxUnclassified bounds the connections waiting for their first bytes:
// past it a new connection is closed at once, so that idle connections
// cannot pile up goroutines and file descriptors on the CONTROLLER
// listener.
var maxUnclassified = 1024

type controllerMux struct {
	ln net.Listener
	// tls, when set, wraps every connection in TLS before its first
	// bytes are read: raft runs inside it too.
	tls     *QuorumTLS
	logger  zerolog.Logger
	raftCh  chan net.Conn
	kafkaCh chan net.Conn
	done    chan struct{}
	once    sync.Once
	kafka   *kafkaSide
	// pending holds a token per connection being classified.
	pending chan struct{}
	// routes reroute the raft connections this node dials (set before
	// raft starts; see QuorumConfig.PeerRoutes).
	routes protocol.PeerRoutes
}

func newControllerMux(addr string, qt *QuorumTLS, logger zerolog.Logger) (*controllerMux, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("controller listener %s: the quorum needs an address its peers can reach, not %s", addr, ta.IP)
	}
	m := &controllerMux{ln: ln, tls: qt, logger: logger, raftCh: make(chan net.Conn), kafkaCh: make(chan net.Conn), done: make(chan struct{}),
		pending: make(chan struct{}, maxUnclassified)}
	m.kafka = &kafkaSide{m: m, closed: make(chan struct{})}
	go m.accept()
	return m, nil
}

func (m *controllerMux) close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		err = m.ln.Close()
	})
	return err
}

func (m *controllerMux) accept() {
	var backoff time.Duration
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off rather
			// than spin.
			m.logger.Warn().Err(err).Msg("controller listener accept failed")
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		select {
		case m.pending <- struct{}{}:
			go func() {
				defer func() { <-m.pending }()
				m.classify(nc)
			}()
		default:
			m.logger.Warn().Str("remote", nc.RemoteAddr().String()).Int("limit", cap(m.pending)).
				Msg("too many connections waiting to send their first bytes; closing this one")
			nc.Close()
		}
	}
}

// classify reads a connection's first four bytes and hands it to raft or
// to the Kafka side.
func (m *controllerMux) classify(nc net.Conn) {
	var p [4]byte
	var tc *tls.Conn
	if m.tls != nil {
		tc = tls.Server(nc, m.tls.Server)
		nc = tc
	}
	nc.SetDeadline(time.Now().Add(classifyTimeout))
	if tc != nil {
		if err := tc.Handshake(); err != nil {
			m.logger.Warn().Err(err).Str("remote", nc.RemoteAddr().String()).
				Msgf("TLS handshake with %s on the controller listener failed; closing the connection", nc.RemoteAddr())
			nc.Close()
			return
		}
	}
	if _, err := io.ReadFull(nc, p[:]); err != nil {
		nc.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	if p == raftPreamble && tc != nil && len(tc.ConnectionState().VerifiedChains) == 0 {
		// A secured quorum has no unauthenticated path: raft only from
		// a peer whose certificate the truststore verified.
		m.logger.Warn().Str("remote", nc.RemoteAddr().String()).
			Msgf("raft connection from %s without a verified client certificate; closing it", nc.RemoteAddr())
		nc.Close()
		return
	}
	if p == raftPreamble {
		select {
		case m.raftCh <- nc:
		case <-m.done:
			nc.Close()
		}
		return
	}
	var kc net.Conn = &prefixedConn{Conn: nc, prefix: p[:]}
	if tc != nil {
		kc = &tlsPrefixedConn{prefixedConn{Conn: nc, prefix: p[:]}, tc}
	}
	select {
	case m.kafkaCh <- kc:
	case <-m.kafka.closed:
		nc.Close()
	case <-m.done:
		nc.Close()
	}
}

// prefixedConn gives back the bytes classify read.
type prefixedConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixedConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// tlsPrefixedConn is a prefixedConn over TLS; the protocol server reads
// the client certificate from ConnectionState.
type tlsPrefixedConn struct {
	prefixedConn
	tc *tls.Conn
}

func (c *tlsPrefixedConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// raftStream is the raft transport's half (raft.StreamLayer).
type raftStream struct{ m *controllerMux }

func (s raftStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.m.raftCh:
		return c, nil
	case <-s.m.done:
		return nil, net.ErrClosed
	}
}

func (s raftStream) Close() error { return s.m.close() }

func (s raftStream) Addr() net.Addr { return s.m.ln.Addr() }

// Dial reaches a voter through the node's peer routes, so the test-only
// routes (protocol.PeerRoutes) cover quorum traffic as they cover every
// other connection between nodes; without routes it dials addr.
func (s raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	var peerTLS protocol.PeerTLS
	if s.m.tls != nil {
		peerTLS = s.m.tls.Client
	}
	c, err := protocol.DialPeer(context.Background(), string(addr), timeout, peerTLS, s.m.routes)
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(raftPreamble[:]); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}

// kafkaSide is the Kafka-protocol half, a net.Listener for the broker's
// protocol server. Closing it does not stop raft.
type kafkaSide struct {
	m      *controllerMux
	closed chan struct{}
	once   sync.Once
}

func (k *kafkaSide) Accept() (net.Conn, error) {
	select {
	case c := <-k.m.kafkaCh:
		return c, nil
	case <-k.closed:
		return nil, net.ErrClosed
	case <-k.m.done:
		return nil, net.ErrClosed
	}
}

func (k *kafkaSide) Close() error {
	k.once.Do(func() { close(k.closed) })
	return nil
}

func (k *kafkaSide) Addr() net.Addr { return k.m.ln.Addr() }

// ControllerListener returns the Kafka-protocol side of this node's
// CONTROLLER listener, or nil for a one-node quorum, which has none.
func (c *Controller) ControllerListener() net.Listener {
	if c.mux == nil {
		return nil
	}
	return c.mux.kafka
}

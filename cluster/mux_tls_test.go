package cluster

import (
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/tlsconf"
)

func quorumTLS(t *testing.T, dir, keystore string) *QuorumTLS {
	t.Helper()
	c, err := tlsconf.Parse(map[string]string{
		"ssl.keystore.location": filepath.Join(dir, keystore), "ssl.truststore.location": filepath.Join(dir, "ca.pem"),
		"ssl.client.auth": "requested",
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tlsconf.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &QuorumTLS{Server: sc, Client: s.ClientConfig}
}

// On an SSL controller listener raft runs inside TLS, and only a peer
// whose certificate the truststore verifies reaches it: a plaintext raft
// dial, a TLS one without a certificate and one with another CA's are
// all closed.
func TestControllerListenerOverTLSAuthenticatesRaftPeers(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if _, err := tlsconf.GenerateDir(dir, []string{"node1", "node2"}, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconf.GenerateDir(other, []string{"rogue"}, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	m, err := newControllerMux("127.0.0.1:0", quorumTLS(t, dir, "node1.pem"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	addr := m.ln.Addr().String()

	// A peer with a certificate of the cluster's CA reaches raft.
	peer := raftStream{&controllerMux{tls: quorumTLS(t, dir, "node2.pem")}}
	rc, err := peer.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*tls.Conn); !ok {
		t.Fatalf("raft dialled a %T, want a TLS connection", rc)
	}
	rc.Write([]byte{7})
	got := acceptWithin(t, raftStream{m}.Accept)
	b := make([]byte, 1)
	got.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(got, b); err != nil || b[0] != 7 {
		t.Fatalf("raft read %v %v", b, err)
	}
	got.Close()

	refused := func(name string, c net.Conn) {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(raftPreamble[:])
		c.Write([]byte{1})
		if _, err := c.Read(b); err == nil {
			t.Fatalf("%s: the connection was not closed", name)
		}
		c.Close()
	}
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	refused("plaintext raft", plain)

	ca := quorumTLS(t, dir, "node2.pem").Client(addr)
	noCert := ca.Clone()
	noCert.GetClientCertificate = nil
	c, err := tls.Dial("tcp", addr, noCert)
	if err != nil {
		t.Fatal(err)
	}
	refused("raft without a client certificate", c)

	rogue := quorumTLS(t, other, "rogue.pem").Client(addr)
	rogue.VerifyConnection = nil // the rogue trusts the listener
	if c, err := tls.Dial("tcp", addr, rogue); err == nil {
		refused("raft with another CA's certificate", c)
	}

	// Kafka-protocol clients get the TLS connection with its state.
	kc, err := tls.Dial("tcp", addr, quorumTLS(t, dir, "node2.pem").Client(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	kc.Write([]byte{0, 0, 0, 1, 'x'})
	k := acceptWithin(t, m.kafka.Accept)
	defer k.Close()
	st, ok := k.(interface{ ConnectionState() tls.ConnectionState })
	if !ok || len(st.ConnectionState().PeerCertificates) == 0 {
		t.Fatalf("kafka side got %T without the client certificate", k)
	}
	buf := make([]byte, 5)
	k.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(k, buf); err != nil || buf[4] != 'x' {
		t.Fatalf("kafka side read %q %v", buf, err)
	}
}

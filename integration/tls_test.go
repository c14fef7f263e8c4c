package integration

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// genCerts runs `gokafka certs` into dir: a CA (reused once there) and a
// certificate per name.
func genCerts(t testing.TB, dir string, names ...string) {
	t.Helper()
	out, err := exec.Command(gokafkaBin, append([]string{"certs", "--dir", dir}, names...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gokafka certs: %v\n%s", err, out)
	}
}

// clientTLS is a client's TLS config: dir's CA as roots, name's
// certificate when name is not empty.
func clientTLS(t testing.TB, dir, name string) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	c.RootCAs.AppendCertsFromPEM(ca)
	if name != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, name+"-cert.pem"), filepath.Join(dir, name+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// tlsClusterOpts is a three-node cluster with SSL on every listener: the
// client listener (also inter-broker) and CONTROLLER, with client
// certificates required, each node's keystore <dir>/node<id>.pem.
func tlsClusterOpts(t testing.TB, dir string, env map[string]string) clusterOpts {
	t.Helper()
	genCerts(t, dir, "node1", "node2", "node3", "client")
	e := map[string]string{
		"GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "SSL:SSL,CONTROLLER:SSL",
		"GOKAFKA_INTER_BROKER_LISTENER_NAME":     "SSL",
		"GOKAFKA_SSL_TRUSTSTORE_LOCATION":        filepath.Join(dir, "ca.pem"),
		"GOKAFKA_SSL_CLIENT_AUTH":                "required",
	}
	for k, v := range env {
		e[k] = v
	}
	return clusterOpts{
		Env: e,
		NodeEnv: func(id int) map[string]string {
			return map[string]string{"GOKAFKA_SSL_KEYSTORE_LOCATION": filepath.Join(dir, fmt.Sprintf("node%d.pem", id))}
		},
		Listeners: func(port, ctrl int) string {
			return fmt.Sprintf("SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl)
		},
		ClientOpts: []kgo.Opt{kgo.DialTLSConfig(clientTLS(t, dir, "client"))},
	}
}

func (b *broker) logContains(s string) bool {
	out, err := os.ReadFile(b.logPath)
	return err == nil && strings.Contains(ansiEscape.ReplaceAllString(string(out), ""), s)
}

func (b *broker) waitLog(t testing.TB, s string) {
	t.Helper()
	eventually(t, 15*time.Second, func() error {
		if !b.logContains(s) {
			return fmt.Errorf("no %q in the log of %s", s, b.Addr())
		}
		return nil
	})
}

// A cluster with SSL on every listener: clients produce and consume over
// TLS with their certificate as principal, the brokers replicate and reach
// the controller over TLS (a topic with RF 3 and acks=all needs both), and
// clients the listener must refuse are refused while the others go on.
func TestTLSClusterOnEveryListener(t *testing.T) {
	dir := t.TempDir()
	c := startClusterWith(t, tlsClusterOpts(t, dir, map[string]string{
		"GOKAFKA_LOG_LEVEL": "debug",
		// Unused by PEM stores; set to see it kept secret.
		"GOKAFKA_SSL_TRUSTSTORE_PASSWORD": "trust-secret",
	}))
	const topic = "tls-everywhere"
	c.createTopic(t, topic, 3, nil)

	produce := func(n int, tag string) {
		t.Helper()
		cl := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
		defer cl.Close()
		ctx := testCtx(t, 30*time.Second)
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}).FirstErr(); err != nil {
				t.Fatalf("produce over TLS: %v", err)
			}
		}
	}
	produce(50, "a")
	if got := c.consumeAll(t, topic, 3); len(got) != 50 {
		t.Fatalf("consumed %d records over TLS, want 50", len(got))
	}

	// The client's certificate is its principal: Kafka's DEFAULT rule
	// takes the whole subject DN.
	eventually(t, 15*time.Second, func() error {
		for _, b := range c.nodes {
			if b.logContains("User:CN=client") {
				return nil
			}
		}
		return fmt.Errorf("no node logged the principal User:CN=client")
	})

	n1 := c.node(1)
	t.Run("passwords not shown by DescribeConfigs", func(t *testing.T) {
		rcs, err := c.admin(t).DescribeBrokerConfigs(testCtx(t, 15*time.Second), 1)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("1", nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, cfg := range rc.Configs {
			if cfg.Key == "ssl.truststore.password" {
				found = true
				if !cfg.Sensitive || cfg.Value != nil {
					t.Fatalf("ssl.truststore.password: sensitive %v, value %v; want sensitive with no value", cfg.Sensitive, cfg.MaybeValue())
				}
			}
			if cfg.Key == "ssl.truststore.location" && (cfg.Sensitive || cfg.Value == nil) {
				t.Fatalf("ssl.truststore.location hidden")
			}
		}
		if !found {
			t.Fatal("ssl.truststore.password not listed")
		}
	})
	t.Run("plaintext client refused", func(t *testing.T) {
		plain, err := net.DialTimeout("tcp", n1.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		plain.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("plain")).AppendRequest(nil, req, 1))
		plain.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(plain)
		if err != nil && !isConnReset(err) {
			t.Fatalf("the plaintext connection was not closed: %v", err)
		}
		if len(b) > 0 && b[0] != 0x15 { // at most a TLS alert
			t.Fatalf("the plaintext client got %x", b)
		}
		n1.waitLog(t, "TLS handshake with "+plain.LocalAddr().String()+" failed")
	})

	t.Run("client certificate of another CA refused", func(t *testing.T) {
		other := t.TempDir()
		genCerts(t, other, "rogue")
		rogue := clientTLS(t, dir, "")
		rogue.Certificates = clientTLS(t, other, "rogue").Certificates
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n1.Addr(), rogue)
		if err == nil {
			// TLS 1.3: the refusal arrives after the client's handshake.
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = conn.Read(make([]byte, 1))
		}
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("a client certificate of another CA: err %v, want a certificate alert", err)
		}
		n1.waitLog(t, "TLS handshake with "+conn.LocalAddr().String()+" failed")
		without := clientTLS(t, dir, "")
		conn2, err := tls.Dial("tcp", n1.Addr(), without)
		if err == nil {
			defer conn2.Close()
			conn2.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = conn2.Read(make([]byte, 1))
		}
		if err == nil {
			t.Fatal("a client without a certificate was served with ssl.client.auth=required")
		}
	})

	// The refused clients did not disturb anyone.
	produce(10, "b")
	for _, b := range c.nodes {
		b.CheckAlive(t)
	}

	t.Run("replaced keystore served to new connections", func(t *testing.T) {
		genCerts(t, dir, "node1-renewed")
		ks := filepath.Join(dir, "node1.pem")
		if err := os.Rename(filepath.Join(dir, "node1-renewed.pem"), ks); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(2 * time.Second)
		os.Chtimes(ks, later, later)
		conn, err := tls.Dial("tcp", n1.Addr(), clientTLS(t, dir, "client"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "node1-renewed" {
			t.Fatalf("a new connection got the certificate of %q, want node1-renewed", cn)
		}
		n1.waitLog(t, "TLS stores reloaded")
		// The renewed certificate serves clients and peers alike.
		produce(10, "c")
	})
}

func isConnReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "broken pipe"))
}

package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func parseLeaf(t *testing.T, l Leaf) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(l.CertPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseDefaultsAndOverlay(t *testing.T) {
	props := Overlay(
		map[string]string{"ssl.client.auth": "required", "ssl.keystore.location": "/global.pem", "log.dirs": "x"},
		map[string]string{"ssl.keystore.location": "/listener.pem"},
	)
	if _, ok := props["log.dirs"]; ok {
		t.Fatal("Overlay kept a property that is not ssl.*")
	}
	c, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	if c.KeystoreLocation != "/listener.pem" || c.ClientAuth != ClientAuthRequired {
		t.Fatalf("listener value does not override the broker-wide one: %+v", c)
	}
	if c.MinVersion != tls.VersionTLS12 || c.MaxVersion != tls.VersionTLS13 || !c.VerifyHostname || len(c.Rules) != 1 || !c.Rules[0].Default {
		t.Fatalf("Kafka's defaults not applied: %+v", c)
	}
}

func TestParseProtocolsAndCipherSuites(t *testing.T) {
	c, err := Parse(map[string]string{
		"ssl.enabled.protocols": "TLSv1.3",
		"ssl.cipher.suites":     "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.MinVersion != tls.VersionTLS13 || c.MaxVersion != tls.VersionTLS13 {
		t.Fatalf("versions %x-%x", c.MinVersion, c.MaxVersion)
	}
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
	if len(c.CipherSuites) != 2 || c.CipherSuites[0] != want[0] || c.CipherSuites[1] != want[1] {
		t.Fatalf("cipher suites %v, want %v (TLS 1.3 suites are not configurable)", c.CipherSuites, want)
	}
}

func TestParseRejectsInvalid(t *testing.T) {
	for _, props := range []map[string]string{
		{"ssl.keystore.type": "JKS"},
		{"ssl.client.auth": "always"},
		{"ssl.enabled.protocols": "SSLv3"},
		{"ssl.cipher.suites": "TLS_NOT_A_SUITE"},
		{"ssl.keystore.location": "/a.pem", "ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c"},
		{"ssl.keystore.key": "k"},
		{"ssl.endpoint.identification.algorithm": "ldap"},
	} {
		if _, err := Parse(props); err == nil {
			t.Errorf("Parse(%v) accepted", props)
		}
	}
}

type pki struct {
	dir string
	ca  *CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	if _, err := GenerateDir(dir, []string{"server", "client"}, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &pki{dir: dir, ca: ca}
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func mustStore(t *testing.T, props map[string]string) *Store {
	t.Helper()
	c, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handshake runs a TLS handshake between the two configs over a pipe and
// returns what the server saw.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	a.SetDeadline(time.Now().Add(10 * time.Second))
	b.SetDeadline(time.Now().Add(10 * time.Second))
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, server)
	cl := tls.Client(b, client)
	errc := make(chan error, 1)
	go func() {
		err := cl.Handshake()
		if err == nil {
			// TLS 1.3: the client learns of a rejected certificate
			// when it reads.
			cl.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err = cl.Read(make([]byte, 1))
			if err == io.EOF || err != nil && strings.Contains(err.Error(), "timeout") {
				err = nil
			}
		}
		if err != nil {
			// Unblocks a server still writing its flight.
			b.Close()
		}
		errc <- err
	}()
	serr := srv.Handshake()
	if serr == nil {
		srv.Close()
	} else {
		a.Close()
	}
	cerr := <-errc
	if serr != nil {
		return tls.ConnectionState{}, serr
	}
	return srv.ConnectionState(), cerr
}

func TestMutualTLSPrincipalFromClientCertificate(t *testing.T) {
	p := newPKI(t)
	server := mustStore(t, map[string]string{"ssl.keystore.location": p.path("server.pem"), "ssl.truststore.location": p.path("ca.pem"), "ssl.client.auth": "required"})
	client := mustStore(t, map[string]string{"ssl.keystore.location": p.path("client.pem"), "ssl.truststore.location": p.path("ca.pem")})
	sc, err := server.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := handshake(t, sc, client.ClientConfig("127.0.0.1:9093"))
	if err != nil {
		t.Fatal(err)
	}
	name, ok, err := server.Principal(&cs)
	if err != nil || !ok || name != "CN=client" {
		t.Fatalf("principal %q %v %v, want CN=client (Kafka's DEFAULT rule: the whole DN)", name, ok, err)
	}
}

func TestClientAuthRequiredRefusesAnotherCAsCertificate(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	server := mustStore(t, map[string]string{"ssl.keystore.location": p.path("server.pem"), "ssl.truststore.location": p.path("ca.pem"), "ssl.client.auth": "required"})
	sc, _ := server.ServerConfig()
	// The client trusts the server but presents a certificate of another CA.
	rogue := mustStore(t, map[string]string{"ssl.keystore.location": other.path("client.pem"), "ssl.truststore.location": p.path("ca.pem")})
	if _, err := handshake(t, sc, rogue.ClientConfig("127.0.0.1:1")); err == nil {
		t.Fatal("a certificate signed by another CA was accepted with ssl.client.auth=required")
	}
	// And no certificate at all.
	anon := mustStore(t, map[string]string{"ssl.truststore.location": p.path("ca.pem")})
	if _, err := handshake(t, sc, anon.ClientConfig("127.0.0.1:1")); err == nil {
		t.Fatal("a client without a certificate was accepted with ssl.client.auth=required")
	}
}

func TestClientAuthRequestedAcceptsNoCertificateAsAnonymous(t *testing.T) {
	p := newPKI(t)
	server := mustStore(t, map[string]string{"ssl.keystore.location": p.path("server.pem"), "ssl.truststore.location": p.path("ca.pem"), "ssl.client.auth": "requested"})
	sc, _ := server.ServerConfig()
	anon := mustStore(t, map[string]string{"ssl.truststore.location": p.path("ca.pem")})
	cs, err := handshake(t, sc, anon.ClientConfig("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := server.Principal(&cs); ok {
		t.Fatal("a connection without a client certificate got a principal")
	}
}

func TestClientVerifiesServerNameAndTruststore(t *testing.T) {
	p := newPKI(t)
	server := mustStore(t, map[string]string{"ssl.keystore.location": p.path("server.pem")})
	sc, _ := server.ServerConfig()
	cl := mustStore(t, map[string]string{"ssl.truststore.location": p.path("ca.pem")})
	if _, err := handshake(t, sc, cl.ClientConfig("10.1.2.3:9092")); err == nil {
		t.Fatal("a server certificate without the dialled address in its SANs was accepted")
	}
	noVerify := mustStore(t, map[string]string{"ssl.truststore.location": p.path("ca.pem"), "ssl.endpoint.identification.algorithm": ""})
	if _, err := handshake(t, sc, noVerify.ClientConfig("10.1.2.3:9092")); err != nil {
		t.Fatalf("with ssl.endpoint.identification.algorithm empty: %v", err)
	}
	other := newPKI(t)
	untrusting := mustStore(t, map[string]string{"ssl.truststore.location": other.path("ca.pem")})
	if _, err := handshake(t, sc, untrusting.ClientConfig("127.0.0.1:9092")); err == nil {
		t.Fatal("a server certificate of an untrusted CA was accepted")
	}
}

func TestReplacedKeystoreIsServedToNewConnections(t *testing.T) {
	p := newPKI(t)
	ks := p.path("server.pem")
	server := mustStore(t, map[string]string{"ssl.keystore.location": ks})
	sc, _ := server.ServerConfig()
	client := mustStore(t, map[string]string{"ssl.truststore.location": p.path("ca.pem")})
	serverCN := func() string {
		t.Helper()
		var cn string
		cc := client.ClientConfig("127.0.0.1:1")
		cc.VerifyConnection = func(cs tls.ConnectionState) error { cn = cs.PeerCertificates[0].Subject.CommonName; return nil }
		if _, err := handshake(t, sc, cc); err != nil {
			t.Fatal(err)
		}
		return cn
	}
	if cn := serverCN(); cn != "server" {
		t.Fatalf("CN %q", cn)
	}
	leaf, err := p.ca.Issue("server-renewed", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tmp := ks + ".tmp"
	if err := os.WriteFile(tmp, leaf.Keystore(), 0o600); err != nil {
		t.Fatal(err)
	}
	// A later modification time, whatever the file system's resolution.
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(tmp, later, later)
	if err := os.Rename(tmp, ks); err != nil {
		t.Fatal(err)
	}
	if cn := serverCN(); cn != "server-renewed" {
		t.Fatalf("after replacing the keystore the server still presents %q", cn)
	}
	// A broken file keeps the previous certificate.
	os.WriteFile(ks, []byte("garbage"), 0o600)
	later = later.Add(2 * time.Second)
	os.Chtimes(ks, later, later)
	if cn := serverCN(); cn != "server-renewed" {
		t.Fatalf("a broken keystore replaced the served certificate: %q", cn)
	}
}

func TestEncryptedPKCS8KeyWithKeyPassword(t *testing.T) {
	cert, err := os.ReadFile("testdata/enc-cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("testdata/enc-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"ssl.keystore.certificate.chain": string(cert), "ssl.keystore.key": string(key)}
	c, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "ssl.key.password") {
		t.Fatalf("encrypted key without a password: %v", err)
	}
	c.KeyPassword = "wrong"
	if _, err := New(c, zerolog.Nop()); err == nil {
		t.Fatal("wrong password accepted")
	}
	c.KeyPassword = "s3cret"
	if _, err := New(c, zerolog.Nop()); err != nil {
		t.Fatalf("openssl's PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC) key: %v", err)
	}
}

func TestLegacyEncryptedPEMKeyWithKeyPassword(t *testing.T) {
	cert, _ := os.ReadFile("testdata/enc-cert.pem")
	key, err := os.ReadFile("testdata/legacy-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(map[string]string{"ssl.keystore.certificate.chain": string(cert), "ssl.keystore.key": string(key), "ssl.key.password": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c, zerolog.Nop()); err != nil {
		t.Fatalf("openssl ec -aes256 key: %v", err)
	}
	c.KeyPassword = "wrong"
	if _, err := New(c, zerolog.Nop()); err == nil {
		t.Fatal("wrong password accepted")
	}
}

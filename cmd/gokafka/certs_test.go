package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/tlsconf"
)

func TestCertsCommandWritesACAAndKeystoresItVerifies(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if rc := runCerts([]string{"--dir", dir, "--hosts", "broker1.example,10.0.0.7", "node1", "admin"}, &out, &errOut); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errOut.String())
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, name := range []string{"node1", "admin"} {
		// The keystore loads as Kafka's PEM keystore would.
		c, err := tlsconf.Parse(map[string]string{"ssl.keystore.location": filepath.Join(dir, name+".pem"), "ssl.truststore.location": filepath.Join(dir, "ca.pem")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tlsconf.New(c, zerolog.Nop()); err != nil {
			t.Fatalf("%s.pem: %v", name, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, name+"-cert.pem"))
		blk, _ := pem.Decode(b)
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != name {
			t.Fatalf("CN %q", cert.Subject.CommonName)
		}
		for _, host := range []string{"127.0.0.1", "localhost", "broker1.example", "10.0.0.7"} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("%s for %s: %v", name, host, err)
			}
		}
		if !containsIP(cert.IPAddresses, "::1") {
			t.Errorf("%s lacks ::1", name)
		}
	}
	// A second run reuses the CA: old and new certificates share it.
	if rc := runCerts([]string{"--dir", dir, "client2"}, &out, &errOut); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errOut.String())
	}
	again, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if !bytes.Equal(again, caPEM) {
		t.Fatal("a second run replaced the CA")
	}
	if rc := runCerts(nil, &out, &errOut); rc != 2 {
		t.Fatalf("no names: rc %d, want 2", rc)
	}
}

func containsIP(ips []net.IP, s string) bool {
	for _, ip := range ips {
		if ip.Equal(net.ParseIP(s)) {
			return true
		}
	}
	return false
}

// config/secure.yaml, the README's secured example, loads as a valid
// configuration: SASL_SSL for clients and brokers with SCRAM, TLS with
// client certificates on CONTROLLER, the bootstrap SCRAM users and ACLs.
func TestSecureExampleConfigLoads(t *testing.T) {
	t.Setenv("GOKAFKA_NODE_ID", "2")
	t.Setenv("GOKAFKA_LISTENERS", "SASL_SSL://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093")
	t.Setenv("GOKAFKA_SSL_KEYSTORE_LOCATION", "certs/node2.pem")
	s, err := loadConfig(filepath.Join("..", "..", "config", "secure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecurityProtocolMap["SASL_SSL"] != "SASL_SSL" || cfg.SecurityProtocolMap["CONTROLLER"] != "SSL" || cfg.InterBrokerListenerName != "SASL_SSL" {
		t.Fatalf("listeners: %v, inter-broker %q", cfg.SecurityProtocolMap, cfg.InterBrokerListenerName)
	}
	for _, l := range []string{"SASL_SSL", "CONTROLLER"} {
		tc, err := tlsconf.Parse(tlsconf.Overlay(cfg.SSL, cfg.ListenerSettings[l]))
		if err != nil {
			t.Fatal(err)
		}
		if tc.KeystoreLocation != "certs/node2.pem" || tc.TruststoreLocation != "certs/ca.pem" || tc.ClientAuth != tlsconf.ClientAuthRequired {
			t.Fatalf("%s: TLS settings %+v", l, tc)
		}
		if name, err := tlsconf.MapPrincipal(tc.Rules, "CN=node2"); err != nil || name != "node2" {
			t.Fatalf("CN=node2 maps to %q, %v", name, err)
		}
	}
	if got := strings.Join(cfg.SASL.EnabledMechanisms, ","); got != "SCRAM-SHA-256,SCRAM-SHA-512" || cfg.SASL.InterBrokerMechanism != "SCRAM-SHA-512" {
		t.Fatalf("SASL: enabled %s, inter-broker %q", got, cfg.SASL.InterBrokerMechanism)
	}
	var users []string
	for _, u := range cfg.SASL.BootstrapScram {
		users = append(users, u.Mechanism+" "+u.User)
	}
	if got := strings.Join(users, ", "); got != "SCRAM-SHA-512 admin, SCRAM-SHA-512 alice" {
		t.Fatalf("bootstrap SCRAM users: %s", got)
	}
	if cfg.Authorizer == nil || strings.Join(cfg.Authorizer.SuperUsers, ";") != "User:admin;User:node1;User:node2;User:node3" {
		t.Fatalf("authorizer %+v", cfg.Authorizer)
	}
}

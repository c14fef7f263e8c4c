package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/tlsconf"
)

func TestListenerTLSResolvesKafkasRules(t *testing.T) {
	cfg := &Config{
		ControllerListenerNames: []string{"CONTROLLER"},
		SSL:                     map[string]string{"ssl.keystore.location": "/node.pem", "ssl.client.auth": "required"},
		ListenerSettings: map[string]map[string]string{
			"INTERNAL": {"ssl.keystore.location": "/internal.pem"},
			"SECURE":   {"ssl.client.auth": "requested"},
		},
	}
	for _, tc := range []struct {
		name, proto, keystore string
		auth                  tlsconf.ClientAuth
	}{
		// The broker-wide values, overridden by the listener's own.
		{"SSL", "SSL", "/node.pem", tlsconf.ClientAuthRequired},
		{"INTERNAL", "SSL", "/internal.pem", tlsconf.ClientAuthRequired},
		// KIP-684: on SASL_SSL only the listener's own ssl.client.auth.
		{"CLIENT", "SASL_SSL", "/node.pem", tlsconf.ClientAuthNone},
		{"SECURE", "SASL_SSL", "/node.pem", tlsconf.ClientAuthRequested},
	} {
		got, err := listenerTLS(cfg, tc.name, tc.proto)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.KeystoreLocation != tc.keystore || got.ClientAuth != tc.auth {
			t.Errorf("%s (%s): keystore %q, client auth %s; want %q, %s", tc.name, tc.proto, got.KeystoreLocation, got.ClientAuth, tc.keystore, tc.auth)
		}
	}
	// The controller listener always asks for certificates: raft peers
	// authenticate with them.
	cfg.SSL["ssl.client.auth"] = "none"
	got, err := listenerTLS(cfg, "CONTROLLER", "SSL")
	if err != nil || got.ClientAuth != tlsconf.ClientAuthRequested {
		t.Fatalf("controller listener: %s, %v; want requested", got.ClientAuth, err)
	}
}

func TestSSLListenerWithoutKeystoreRefusedAtStart(t *testing.T) {
	cfg := Config{
		NodeID:              1,
		Listeners:           []string{"SSL://127.0.0.1:0"},
		SecurityProtocolMap: map[string]string{"SSL": "SSL"},
		LogDirs:             []string{t.TempDir()},
		SSL:                 map[string]string{"ssl.truststore.location": ""},
	}
	_, err := Start(context.Background(), cfg, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Fatalf("Start: %v; want a missing keystore refused", err)
	}
}

package broker

import (
	"context"
	"strings"
	"testing"
	"time"
)

func saslTestConfig(settings map[string]string) *Config {
	return &Config{
		ControllerListenerNames: []string{"CONTROLLER"},
		ListenerSettings:        map[string]map[string]string{"SASL_PLAINTEXT": settings},
		SASL:                    SASLConfig{EnabledMechanisms: []string{"PLAIN", "SCRAM-SHA-256"}, InterBrokerMechanism: "SCRAM-SHA-256", MaxReauth: time.Minute},
	}
}

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

func TestSASLControllerListenerRefusedWithAdviceToUseMTLS(t *testing.T) {
	cfg := saslTestConfig(nil)
	err := checkSecurityProtocol(cfg, Listener{Name: "CONTROLLER", SecurityProtocol: "SASL_PLAINTEXT"})
	if err == nil || !strings.Contains(err.Error(), "ssl.client.auth=required") {
		t.Fatalf("SASL controller listener: %v", err)
	}
	if err := checkSecurityProtocol(cfg, Listener{Name: "SASL_PLAINTEXT", SecurityProtocol: "SASL_PLAINTEXT"}); err != nil {
		t.Fatalf("SASL_PLAINTEXT broker listener: %v", err)
	}
}

func TestSASLListenerConfigFromKafkaProperties(t *testing.T) {
	cfg := saslTestConfig(map[string]string{
		"sasl.enabled.mechanisms":                 "plain,SCRAM-SHA-512",
		"plain.sasl.jaas.config":                  testPlainJAAS,
		"connections.max.reauth.ms":               "30000",
		"scram-sha-512.connections.max.reauth.ms": "5000",
	})
	sc, err := saslServerConfig(context.Background(), cfg, "SASL_PLAINTEXT", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sc.Mechanisms, ",") != "PLAIN,SCRAM-SHA-512" {
		t.Fatalf("mechanisms %v: the listener's own list wins", sc.Mechanisms)
	}
	if sc.PlainUsers["alice"] != "alice-secret" || len(sc.PlainUsers) != 2 {
		t.Fatalf("users %v", sc.PlainUsers)
	}
	if sc.ReauthLimit("PLAIN") != 30*time.Second || sc.ReauthLimit("SCRAM-SHA-512") != 5*time.Second {
		t.Fatalf("reauth %v %v", sc.ReauthLimit("PLAIN"), sc.ReauthLimit("SCRAM-SHA-512"))
	}
}

func TestSASLListenerConfigRefusesWhatCannotWork(t *testing.T) {
	for name, settings := range map[string]map[string]string{
		"PLAIN without users": {"sasl.enabled.mechanisms": "PLAIN"},
		"GSSAPI":              {"sasl.enabled.mechanisms": "GSSAPI"},
		"bad JAAS":            {"plain.sasl.jaas.config": `PlainLoginModule required user_a="x"`},
		"bad reauth":          {"plain.sasl.jaas.config": testPlainJAAS, "connections.max.reauth.ms": "soon"},
		"missing JWKS":        {"sasl.enabled.mechanisms": "OAUTHBEARER", "oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json"},
	} {
		if _, err := saslServerConfig(context.Background(), saslTestConfig(settings), "SASL_PLAINTEXT", nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSASLInterBrokerCredentialsFromTheListenersJAAS(t *testing.T) {
	cfg := saslTestConfig(map[string]string{
		"scram.sha.256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
	})
	m, err := peerSASL(cfg, "SASL_PLAINTEXT")
	if err != nil || m.Name() != "SCRAM-SHA-256" {
		t.Fatalf("mechanism %v err %v", m, err)
	}
	cfg.SASL.InterBrokerMechanism = "PLAIN"
	cfg.ListenerSettings["SASL_PLAINTEXT"]["plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`
	if _, err := peerSASL(cfg, "SASL_PLAINTEXT"); err == nil || !strings.Contains(err.Error(), "username and password") {
		t.Fatalf("PLAIN without the broker's own username: %v", err)
	}
	cfg.SASL.InterBrokerMechanism = "OAUTHBEARER"
	if _, err := peerSASL(cfg, "SASL_PLAINTEXT"); err == nil || !strings.Contains(err.Error(), "sasl.enabled.mechanisms") {
		t.Fatalf("a mechanism the listener does not enable: %v", err)
	}
}

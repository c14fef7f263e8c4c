package main

import (
	"strings"
	"testing"

	"github.com/gokafka/gokafka/sasl"
)

func TestBootstrapScramParsedAsKafkaStorageAddScram(t *testing.T) {
	got, err := parseBootstrapScram(`SCRAM-SHA-256=[name=admin,password=admin-secret] ; SCRAM-SHA-512=[name="kgo",password="p=w",iterations=8192]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].User != "admin" || got[0].Mechanism != sasl.ScramSHA256 || got[0].Cred.Iterations != 4096 ||
		got[1].User != "kgo" || got[1].Mechanism != sasl.ScramSHA512 || got[1].Cred.Iterations != 8192 {
		t.Fatalf("parsed %+v", got)
	}
	salted, _ := sasl.SaltPassword(sasl.ScramSHA512, "p=w", got[1].Cred.Salt, 8192)
	if want := sasl.CredentialFromSalted(sasl.ScramSHA512, salted, got[1].Cred.Salt, 8192); string(want.StoredKey) != string(got[1].Cred.StoredKey) {
		t.Fatal("the stored key is not derived from the password")
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=b]",
		"SCRAM-SHA-256=[name=a]",
		"SCRAM-SHA-256=[name=a,password=b,iterations=100]",
		"SCRAM-SHA-256=[name=a,password=b",
		"admin:secret",
	} {
		if _, err := parseBootstrapScram(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCredentialsStayOutOfDescribeConfigs(t *testing.T) {
	t.Setenv("GOKAFKA_LISTENERS", "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093")
	t.Setenv("GOKAFKA_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG", `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`)
	t.Setenv("GOKAFKA_GOKAFKA_SCRAM_BOOTSTRAP_USERS", "SCRAM-SHA-256=[name=admin,password=admin-secret]")
	cfg := envConfig(t)
	if cfg.ListenerSettings["SASL_PLAINTEXT"]["plain.sasl.jaas.config"] == "" || len(cfg.SASL.BootstrapScram) != 1 {
		t.Fatalf("settings not read: %v %v", cfg.ListenerSettings, cfg.SASL.BootstrapScram)
	}
	for k, v := range cfg.BrokerDefaults.Values {
		if strings.Contains(v, "secret") {
			t.Errorf("DescribeConfigs would show %s=%s", k, v)
		}
	}
}

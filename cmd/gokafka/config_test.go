package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gokafka/gokafka/broker"
)

// envConfig builds the broker configuration from the environment alone,
// failing the test if it cannot.
func envConfig(t *testing.T) broker.Config {
	t.Helper()
	s, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// envConfigErr loads the environment, which must parse, and returns what
// brokerConfig says of it.
func envConfigErr(t *testing.T) error {
	t.Helper()
	s, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.brokerConfig()
	return err
}

// config.yaml documents every property with its default; the table in
// config.go is what the code uses. They must not drift.
func TestConfigYAMLListsEveryPropertyWithItsDefault(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("config.yaml line %q is not key: value", line)
		}
		lines[k] = strings.Trim(v, `"`)
	}
	for _, p := range properties {
		v, ok := lines[p.name]
		if !ok {
			t.Errorf("config.yaml lacks %s", p.name)
			continue
		}
		want := p.def
		if v, ok := localValues[p.name]; ok {
			want = v
		}
		if v != want {
			t.Errorf("config.yaml has %s: %q, want %q", p.name, v, want)
		}
		if !strings.Contains(string(b), "# "+p.doc) {
			t.Errorf("config.yaml lacks the comment for %s", p.name)
		}
		delete(lines, p.name)
	}
	for k := range lines {
		t.Errorf("config.yaml has %s, which the broker does not know", k)
	}
}

func TestConfigFileThenEnvOverride(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("num.partitions: 4\nlog.retention.minutes: 5\nlog.dirs: /a,/b\n"), 0o644)
	t.Setenv("GOKAFKA_NUM_PARTITIONS", "7")
	s, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NumPartitions != 7 {
		t.Errorf("num.partitions = %d, want env's 7", cfg.NumPartitions)
	}
	if got := cfg.BrokerDefaults.Values["log.retention.ms"]; got != "300000" {
		t.Errorf("log.retention.ms = %s, want 300000 from minutes", got)
	}
	if !cfg.BrokerDefaults.Set["log.retention.ms"] {
		t.Error("log.retention.ms should count as set")
	}
	if len(cfg.LogDirs) != 2 || cfg.LogDirs[1] != "/b" {
		t.Errorf("log.dirs = %v", cfg.LogDirs)
	}
	if cfg.BrokerDefaults.Values["log.flush.interval.ms"] != "9223372036854775807" || math.MaxInt64 != 9223372036854775807 {
		t.Errorf("log.flush.interval.ms default = %s", cfg.BrokerDefaults.Values["log.flush.interval.ms"])
	}
}

func TestConfigRejectsUnknownAndInvalid(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("num.partitionz: 4\n"), 0o644)
	if _, err := loadConfig(bad); err == nil {
		t.Error("unknown property accepted")
	}
	t.Setenv("GOKAFKA_NUM_PARTITIONS", "zero")
	if err := envConfigErr(t); err == nil {
		t.Error("non-numeric num.partitions accepted")
	}
}

func TestDefaultsServeLocalhost9092WithDataDir(t *testing.T) {
	cfg := envConfig(t)
	if len(cfg.Listeners) != 1 || cfg.Listeners[0] != "PLAINTEXT://127.0.0.1:9092" || cfg.LogDirs[0] != "./data" {
		t.Fatalf("defaults: %v %v", cfg.Listeners, cfg.LogDirs)
	}
}

func TestConnectionLimitsConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("listener.name.plaintext.max.connections: 5\nmax.connections.per.ip: 20\nmax.connections.per.ip.overrides: \"127.0.0.2:3,localhost:4\"\nqueued.max.request.bytes: 1000000\nfetch.max.bytes: 1048576\n"), 0o644)
	t.Setenv("GOKAFKA_LISTENER_NAME_INTERNAL_MAX_CONNECTIONS", "7")
	s, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Protocol
	if p.ListenerMaxConnections["PLAINTEXT"] != 5 || p.ListenerMaxConnections["INTERNAL"] != 7 || len(p.ListenerMaxConnections) != 2 {
		t.Errorf("listener limits %v", p.ListenerMaxConnections)
	}
	if p.MaxConnectionsPerIP != 20 || p.MaxConnectionsPerIPOverrides["127.0.0.2"] != 3 || p.MaxConnectionsPerIPOverrides["127.0.0.1"] != 4 {
		t.Errorf("per-ip %d, overrides %v", p.MaxConnectionsPerIP, p.MaxConnectionsPerIPOverrides)
	}
	if p.MaxConnections != 2147483647 || p.QueuedMaxRequests != 500 || p.QueuedMaxRequestBytes != 1000000 || cfg.FetchMaxBytes != 1048576 {
		t.Errorf("max.connections %d queued.max.requests %d queued.max.request.bytes %d fetch.max.bytes %d",
			p.MaxConnections, p.QueuedMaxRequests, p.QueuedMaxRequestBytes, cfg.FetchMaxBytes)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("max.connections.per.ip.overrides: \"127.0.0.1\"\n"), 0o644)
	if s, err := loadConfig(bad); err != nil {
		t.Fatal(err)
	} else if _, err := s.brokerConfig(); err == nil {
		t.Error("an override without a count was accepted")
	}
}

func TestListenerSecurityProtocolsAndPerListenerSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("listeners: \"SASL_SSL://127.0.0.1:9093,INTERNAL://127.0.0.1:9094\"\n"+
		"listener.security.protocol.map: \"SASL_SSL:SASL_SSL,INTERNAL:SSL\"\n"+
		"listener.name.internal.ssl.client.auth: required\n"), 0o644)
	t.Setenv("GOKAFKA_LISTENER_NAME_SASL_SSL_SASL_ENABLED_MECHANISMS", "PLAIN")
	s, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecurityProtocolMap["INTERNAL"] != "SSL" || cfg.SecurityProtocolMap["SASL_SSL"] != "SASL_SSL" {
		t.Errorf("security protocols %v", cfg.SecurityProtocolMap)
	}
	if got := cfg.ListenerSettings["INTERNAL"]["ssl.client.auth"]; got != "required" {
		t.Errorf("listener.name.internal.ssl.client.auth = %q", got)
	}
	if got := cfg.ListenerSettings["SASL_SSL"]["sasl.enabled.mechanisms"]; got != "PLAIN" {
		t.Errorf("listener settings %v", cfg.ListenerSettings)
	}
}

func TestListenerSecurityProtocolMapRejectsUnknownProtocol(t *testing.T) {
	t.Setenv("GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "PLAINTEXT:TLS")
	if err := envConfigErr(t); err == nil || !strings.Contains(err.Error(), "unknown security protocol") {
		t.Fatalf("brokerConfig: %v", err)
	}
}

func TestHTTPListenerDefaultsToLoopbackAndEmptyEnvTurnsItOff(t *testing.T) {
	s, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.str("http.listener"); got != "127.0.0.1:9644" {
		t.Fatalf("default http.listener %q, want 127.0.0.1:9644", got)
	}
	t.Setenv("GOKAFKA_HTTP_LISTENER", "")
	s, err = loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.str("http.listener"); got != "" {
		t.Fatalf("http.listener with GOKAFKA_HTTP_LISTENER empty: %q, want empty (off)", got)
	}
}

func TestLeaderRebalanceConfig(t *testing.T) {
	cfg := envConfig(t)
	if lr := cfg.LeaderRebalance; !lr.Enable || lr.CheckInterval != 300*time.Second || lr.PerBrokerPercentage != 10 {
		t.Fatalf("defaults %+v, want Kafka's: on, 300 s, 10 %%", lr)
	}
	t.Setenv("GOKAFKA_AUTO_LEADER_REBALANCE_ENABLE", "false")
	t.Setenv("GOKAFKA_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", "5")
	t.Setenv("GOKAFKA_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE", "0")
	cfg = envConfig(t)
	if lr := cfg.LeaderRebalance; lr.Enable || lr.CheckInterval != 5*time.Second || lr.PerBrokerPercentage != 0 {
		t.Fatalf("from the environment: %+v", lr)
	}
	t.Setenv("GOKAFKA_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE", "101")
	if err := envConfigErr(t); err == nil {
		t.Fatal("a percentage above 100 was accepted")
	}
}

func TestProcessRolesAndQuorumBootstrapServers(t *testing.T) {
	t.Setenv("GOKAFKA_PROCESS_ROLES", "broker")
	t.Setenv("GOKAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS", "127.0.0.1:9093,127.0.0.1:9094")
	cfg := envConfig(t)
	if !cfg.Roles.BrokerOnly || cfg.Roles.ControllerOnly {
		t.Fatalf("process.roles=broker: %+v", cfg.Roles)
	}
	if v := cfg.Quorum.Voters; len(v) != 2 || v[0].ID != -1 || v[1].Addr != "127.0.0.1:9094" {
		t.Fatalf("bootstrap servers as quorum contacts: %+v", v)
	}

	t.Setenv("GOKAFKA_PROCESS_ROLES", "controller")
	t.Setenv("GOKAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS", "")
	t.Setenv("GOKAFKA_CONTROLLER_QUORUM_VOTERS", "1@127.0.0.1:9093")
	cfg = envConfig(t)
	if !cfg.Roles.ControllerOnly || cfg.Roles.BrokerOnly {
		t.Fatalf("process.roles=controller: %+v", cfg.Roles)
	}

	for _, bad := range []map[string]string{
		{"GOKAFKA_PROCESS_ROLES": "broker", "GOKAFKA_CONTROLLER_QUORUM_VOTERS": "1@127.0.0.1:9093"},
		{"GOKAFKA_PROCESS_ROLES": "broker", "GOKAFKA_CONTROLLER_QUORUM_VOTERS": ""},
		{"GOKAFKA_PROCESS_ROLES": "observer", "GOKAFKA_CONTROLLER_QUORUM_VOTERS": "1@127.0.0.1:9093"},
	} {
		for k, v := range bad {
			t.Setenv(k, v)
		}
		if err := envConfigErr(t); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

// metadata.max.retention.bytes and .ms reach the quorum with Kafka's
// meaning: the defaults as they are, -1 as no limit, 0 as the smallest
// limit (the quorum's own 0 is its default).
func TestConfigMetadataRetentionLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("metadata.max.retention.ms: \"-1\"\n"), 0o644)
	t.Setenv("GOKAFKA_METADATA_MAX_RETENTION_BYTES", "0")
	s, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Quorum.RetentionBytes; got != 1 {
		t.Errorf("metadata.max.retention.bytes 0 reaches the quorum as %d, want 1", got)
	}
	if got := cfg.Quorum.RetentionTime; got >= 0 {
		t.Errorf("metadata.max.retention.ms -1 reaches the quorum as %v, want negative (no limit)", got)
	}

	os.WriteFile(path, []byte("num.partitions: 1\n"), 0o644)
	t.Setenv("GOKAFKA_METADATA_MAX_RETENTION_BYTES", "104857600")
	if s, err = loadConfig(path); err != nil {
		t.Fatal(err)
	}
	if cfg, err = s.brokerConfig(); err != nil {
		t.Fatal(err)
	}
	if cfg.Quorum.RetentionBytes != 104857600 || cfg.Quorum.RetentionTime != 7*24*time.Hour {
		t.Errorf("defaults reach the quorum as %d bytes, %v", cfg.Quorum.RetentionBytes, cfg.Quorum.RetentionTime)
	}
}

package integration

// Stock clients over SASL and TLS: each client of README's security table
// produces records and reads them back through a listener that
// authenticates it (SASL_PLAINTEXT, or SASL_SSL with the broker's
// certificate verified against a CA of `gokafka certs`), with the
// mechanisms its users configure in production.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	segkafka "github.com/segmentio/kafka-go"
	segscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/scram"
)

// secBroker is a single node with a PLAINTEXT listener (the harness's and
// the admin's), a SASL_PLAINTEXT one (PLAIN user alice, both SCRAMs) and a
// SASL_SSL one (both SCRAMs), with the seeded SCRAM users admin
// (SCRAM-SHA-512) and app (SCRAM-SHA-256).
type secBroker struct {
	*broker
	saslPlaintext, saslSSL string
	ca                     string
}

func startSecBroker(t *testing.T) *secBroker {
	t.Helper()
	dir := t.TempDir()
	genCerts(t, dir, "broker")
	port, sp, ss := freePort(t), freePort(t), freePort(t)
	b := startBroker(t, brokerOpts{Port: port, Env: map[string]string{
		"GOKAFKA_LISTENERS":                                           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", port, sp, ss),
		"GOKAFKA_SASL_ENABLED_MECHANISMS":                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"GOKAFKA_LISTENER_NAME_SASL_SSL_SASL_ENABLED_MECHANISMS":      "SCRAM-SHA-256,SCRAM-SHA-512",
		"GOKAFKA_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG": plainJAAS,
		"GOKAFKA_GOKAFKA_SCRAM_BOOTSTRAP_USERS":                       "SCRAM-SHA-512=[name=admin,password=admin-secret] SCRAM-SHA-256=[name=app,password=app-secret]",
		"GOKAFKA_SSL_KEYSTORE_LOCATION":                               filepath.Join(dir, "broker.pem"),
		"GOKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":                    "0",
	}})
	return &secBroker{broker: b, ca: filepath.Join(dir, "ca.pem"),
		saslPlaintext: fmt.Sprintf("127.0.0.1:%d", sp), saslSSL: fmt.Sprintf("127.0.0.1:%d", ss)}
}

// secSetting is one way a client connects: a protocol, a mechanism and
// its user.
type secSetting struct {
	protocol, mechanism, user, password string
}

func (s secSetting) String() string { return s.protocol + " " + s.mechanism }

func (s secSetting) addr(b *secBroker) string {
	if s.protocol == "SASL_SSL" {
		return b.saslSSL
	}
	return b.saslPlaintext
}

func (s secSetting) tlsConfig(t *testing.T, b *secBroker) *tls.Config {
	t.Helper()
	if s.protocol != "SASL_SSL" {
		return nil
	}
	ca, err := os.ReadFile(b.ca)
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	c.RootCAs.AppendCertsFromPEM(ca)
	return c
}

var (
	secSSL512   = secSetting{"SASL_SSL", "SCRAM-SHA-512", "admin", "admin-secret"}
	secSSL256   = secSetting{"SASL_SSL", "SCRAM-SHA-256", "app", "app-secret"}
	secPlain    = secSetting{"SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"}
	secPlain256 = secSetting{"SASL_PLAINTEXT", "SCRAM-SHA-256", "app", "app-secret"}
	secPlain512 = secSetting{"SASL_PLAINTEXT", "SCRAM-SHA-512", "admin", "admin-secret"}
)

// secClient is a row of the table: a client, its version and the
// settings it is driven with; roundTrip writes values to partition 0 of
// topic and reads them back, both through s.
type secClient struct {
	name      string
	version   func(t *testing.T) string
	settings  []secSetting
	roundTrip func(t *testing.T, b *secBroker, s secSetting, topic string, values []string) ([]string, error)
}

func secScriptClient(name string, argv func(t *testing.T) (string, []string), check func(t *testing.T, m *ccMatrix),
	security func(b *secBroker, s secSetting) (string, any), settings ...secSetting) secClient {
	return secClient{
		name:     name,
		settings: settings,
		version: func(t *testing.T) string {
			check(t, &ccMatrix{cells: map[[2]string]ccStatus{}})
			dir, args := argv(t)
			res, _, err := ccScript(t, dir, args, map[string]any{"op": "version"})
			if err != nil {
				t.Fatal(err)
			}
			return res.Version
		},
		roundTrip: func(t *testing.T, b *secBroker, s secSetting, topic string, values []string) ([]string, error) {
			dir, args := argv(t)
			key, sec := security(b, s)
			var recs []ccRecord
			for _, v := range values {
				recs = append(recs, ccRecord{Key: []byte("k"), Value: []byte(v)})
			}
			if _, _, err := ccScript(t, dir, args, map[string]any{"op": "produce", "bootstrap": s.addr(b), "topic": topic,
				"records": ccToWire(recs), "partition": 0, key: sec}); err != nil {
				return nil, err
			}
			_, got, err := ccScript(t, dir, args, map[string]any{"op": "consume", "bootstrap": s.addr(b), "topic": topic,
				"partitions": []int32{0}, "count": len(values), "timeout_ms": 30000, "isolation": "read_uncommitted", key: sec})
			var out []string
			for _, r := range got {
				out = append(out, string(r.Value))
			}
			return out, err
		},
	}
}

// secObject is the "security" object the kafka-python and kafkajs scripts read.
func secObject(b *secBroker, s secSetting) (string, any) {
	o := map[string]any{"protocol": s.protocol, "mechanism": s.mechanism, "username": s.user, "password": s.password}
	if s.protocol == "SASL_SSL" {
		o["ca"] = b.ca
	}
	return "security", o
}

// secRdkafka is librdkafka's configuration for s.
func secRdkafka(b *secBroker, s secSetting) map[string]string {
	c := map[string]string{"security.protocol": s.protocol, "sasl.mechanisms": s.mechanism,
		"sasl.username": s.user, "sasl.password": s.password}
	if s.protocol == "SASL_SSL" {
		c["ssl.ca.location"] = b.ca
	}
	return c
}

func secKcat() secClient {
	return secClient{
		name:     "kcat",
		settings: []secSetting{secSSL512},
		version: func(t *testing.T) string {
			out, stderr, err := ccRun(t, 30*time.Second, "", nil, "kcat", "-V")
			sm := ccKcatVersion.FindSubmatch(append(out, stderr...))
			if err != nil || sm == nil {
				t.Skipf("kcat -V: %v", err)
			}
			return fmt.Sprintf("%s (librdkafka %s)", sm[1], sm[2])
		},
		roundTrip: func(t *testing.T, b *secBroker, s secSetting, topic string, values []string) ([]string, error) {
			args := []string{"-b", s.addr(b), "-t", topic}
			for k, v := range secRdkafka(b, s) {
				args = append(args, "-X", k+"="+v)
			}
			in := strings.Join(values, "\n") + "\n"
			if _, stderr, err := ccRun(t, 60*time.Second, "", []byte(in), "kcat", append(args, "-P", "-p", "0")...); err != nil ||
				bytes.Contains(stderr, []byte("ERROR")) {
				return nil, fmt.Errorf("kcat -P: %v\n%s", err, ccTail(stderr, 2000))
			}
			out, stderr, err := ccRun(t, 60*time.Second, "", nil, "kcat", append(args, "-C", "-p", "0", "-o", "beginning", "-c", fmt.Sprint(len(values)), "-e", "-q")...)
			if err != nil {
				return nil, fmt.Errorf("kcat -C: %v\n%s", err, ccTail(stderr, 2000))
			}
			return strings.Fields(string(out)), nil
		},
	}
}

func secGoModVersion(module string) func(t *testing.T) string {
	return func(t *testing.T) string {
		mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		sm := regexp.MustCompile(regexp.QuoteMeta(module) + ` v(\S+)`).FindSubmatch(mod)
		if sm == nil {
			t.Fatalf("go.mod does not require %s", module)
		}
		return string(sm[1])
	}
}

// xdgSCRAM is sarama's SCRAM client, on github.com/xdg-go/scram as
// sarama's own example does.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	c, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

func secSarama() secClient {
	return secClient{
		name:     "sarama",
		version:  secGoModVersion("github.com/IBM/sarama"),
		settings: []secSetting{secSSL512},
		roundTrip: func(t *testing.T, b *secBroker, s secSetting, topic string, values []string) ([]string, error) {
			cfg := sarama.NewConfig()
			cfg.Version = sarama.V2_8_0_0
			cfg.ClientID = "gokafka-sec-sarama"
			cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, s.tlsConfig(t, b)
			cfg.Net.SASL.Enable, cfg.Net.SASL.User, cfg.Net.SASL.Password = true, s.user, s.password
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA512} }
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			p, err := sarama.NewSyncProducer([]string{s.addr(b)}, cfg)
			if err != nil {
				return nil, err
			}
			for _, v := range values {
				if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
					p.Close()
					return nil, err
				}
			}
			p.Close()
			c, err := sarama.NewConsumer([]string{s.addr(b)}, cfg)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				return nil, err
			}
			defer pc.Close()
			var out []string
			timeout := time.After(30 * time.Second)
			for len(out) < len(values) {
				select {
				case m := <-pc.Messages():
					out = append(out, string(m.Value))
				case err := <-pc.Errors():
					return out, err
				case <-timeout:
					return out, fmt.Errorf("sarama: timed out with %d of %d records", len(out), len(values))
				}
			}
			return out, nil
		},
	}
}

func secKafkaGo() secClient {
	return secClient{
		name:     "kafka-go",
		version:  secGoModVersion("github.com/segmentio/kafka-go"),
		settings: []secSetting{secSSL512},
		roundTrip: func(t *testing.T, b *secBroker, s secSetting, topic string, values []string) ([]string, error) {
			mech, err := segscram.Mechanism(segscram.SHA512, s.user, s.password)
			if err != nil {
				return nil, err
			}
			tc := s.tlsConfig(t, b)
			w := &segkafka.Writer{Addr: segkafka.TCP(s.addr(b)), Topic: topic, RequiredAcks: segkafka.RequireAll,
				Balancer: segkafka.BalancerFunc(func(segkafka.Message, ...int) int { return 0 }), BatchTimeout: 10 * time.Millisecond,
				Transport: &segkafka.Transport{SASL: mech, TLS: tc}}
			var msgs []segkafka.Message
			for _, v := range values {
				msgs = append(msgs, segkafka.Message{Value: []byte(v)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = w.WriteMessages(ctx, msgs...)
			w.Close()
			if err != nil {
				return nil, err
			}
			r := segkafka.NewReader(segkafka.ReaderConfig{Brokers: []string{s.addr(b)}, Topic: topic, Partition: 0,
				MaxWait: 200 * time.Millisecond, Dialer: &segkafka.Dialer{Timeout: 10 * time.Second, SASLMechanism: mech, TLS: tc}})
			defer r.Close()
			var out []string
			for len(out) < len(values) {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return out, err
				}
				out = append(out, string(m.Value))
			}
			return out, nil
		},
	}
}

func secClients() []secClient {
	return []secClient{
		secKcat(),
		secScriptClient("confluent-kafka-python", ccPythonArgv("confluent_client.py"), ccPythonModule("confluent_kafka"),
			func(b *secBroker, s secSetting) (string, any) { return "config", secRdkafka(b, s) }, secSSL512),
		secScriptClient("kafka-python", ccPythonArgv("kafka_python_client.py"), ccPythonModule("kafka"), secObject,
			secPlain, secPlain256, secPlain512),
		secScriptClient("kafkajs", func(t *testing.T) (string, []string) {
			dir := ccKafkajsDir(t)
			return dir, []string{"node", filepath.Join(dir, "client.js")}
		}, ccKafkajsCheck, secObject, secSSL256),
		secSarama(),
		secKafkaGo(),
	}
}

const (
	secTableStart = "<!-- security-table:start -->"
	secTableEnd   = "<!-- security-table:end -->"
)

// TestClientSecurity drives every client of README's security table
// through the settings its row names, and checks README against it (or
// rewrites it with GOKAFKA_UPDATE_README=1).
func TestClientSecurity(t *testing.T) {
	b := startSecBroker(t)
	clients := secClients()
	type row struct {
		version string
		cells   []string
		ran     bool
	}
	rows := make([]row, len(clients))
	for i, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			rows[i].version = c.version(t)
			rows[i].ran = true
			for j, s := range c.settings {
				topic := fmt.Sprintf("sec-%s-%d", c.name, j)
				createTopic(t, b.admin(t), topic, 1, nil)
				values := []string{"one-" + c.name, "two-" + c.name, "three-" + c.name}
				got, err := c.roundTrip(t, b, s, topic, values)
				cell := s.String() + ": yes"
				if err != nil || !slices.Equal(got, values) {
					t.Errorf("%s over %s: got %q, %v; want %q", c.name, s, got, err, values)
					cell = s.String() + ": FAILS"
				}
				rows[i].cells = append(rows[i].cells, cell)
			}
		})
	}
	b.CheckAlive(t)

	var sb strings.Builder
	sb.WriteString("| client | version | SASL / TLS: produce and consume |\n|---|---|---|\n")
	for i, c := range clients {
		fmt.Fprintf(&sb, "| %s | %s | %s |\n", c.name, rows[i].version, strings.Join(rows[i].cells, "; "))
	}
	sb.WriteString("\nSASL_SSL: TLS with the broker's certificate verified against the CA of `gokafka certs`. " +
		"Written by `GOKAFKA_UPDATE_README=1 go test -run TestClientSecurity ./integration/` " +
		"(integration/clients_security_test.go), which otherwise fails when a \"yes\" here does not pass.\n")
	table := sb.String()
	testReport(t, table)

	path := filepath.Join("..", "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, secTableStart), strings.Index(s, secTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s … %s section", secTableStart, secTableEnd)
	}
	if os.Getenv("GOKAFKA_UPDATE_README") != "" {
		for k, r := range rows {
			if !r.ran {
				t.Fatalf("not rewriting README: %s did not run", clients[k].name)
			}
		}
		out := s[:i+len(secTableStart)] + "\n" + table + s[j:]
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Every "yes" README claims must have passed here, for the clients
	// installed on this machine.
	for k, c := range clients {
		for _, line := range strings.Split(s[i:j], "\n") {
			if !strings.HasPrefix(line, "| "+c.name+" |") || !rows[k].ran {
				continue
			}
			for _, claim := range regexp.MustCompile(`[A-Z_]+ [A-Z0-9-]+: yes`).FindAllString(line, -1) {
				if !slices.Contains(rows[k].cells, claim) {
					t.Errorf("README claims %s %s, which did not pass here", c.name, claim)
				}
			}
		}
	}
}

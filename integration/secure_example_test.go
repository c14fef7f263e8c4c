package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// README's "A secured cluster, step by step", on config/secure.yaml: three
// nodes started with --config config/secure.yaml and certificates of
// `gokafka certs` form a SASL_SSL cluster; bad credentials are refused;
// the seeded super user admin
// creates a topic, the seeded user alice is refused it until admin grants
// her an ACL, then produces with acks=all (replicated between the brokers
// over SASL_SSL) and reads back.
func TestSecureExampleClusterStepByStep(t *testing.T) {
	dir := t.TempDir()
	genCerts(t, dir, "node1", "node2", "node3")
	config, err := filepath.Abs(filepath.Join("..", "config", "secure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := clientTLS(t, dir, "")
	c := startClusterWith(t, clusterOpts{
		Args: []string{"--config", config},
		// The file names certs/ca.pem relative to where the nodes run.
		Env: map[string]string{"GOKAFKA_SSL_TRUSTSTORE_LOCATION": filepath.Join(dir, "ca.pem"), "GOKAFKA_LOG_LEVEL": "debug"},
		NodeEnv: func(id int) map[string]string {
			return map[string]string{"GOKAFKA_SSL_KEYSTORE_LOCATION": filepath.Join(dir, fmt.Sprintf("node%d.pem", id))}
		},
		Listeners: func(port, ctrl int) string {
			return fmt.Sprintf("SASL_SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl)
		},
		ClientOpts: []kgo.Opt{kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())},
	})
	c.createTopic(t, "orders", 3, nil)

	// Over SASL_SSL, a wrong password and an unknown user are refused
	// with SASL_AUTHENTICATION_FAILED and logged.
	for _, who := range []scram.Auth{{User: "alice", Pass: "wrong"}, {User: "mallory", Pass: "x"}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(2).Addr()), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(who.AsSha512Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(testCtx(t, 10*time.Second))
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s with a wrong password over SASL_SSL: %v, want SASL_AUTHENTICATION_FAILED", who.User, err)
		}
	}
	c.node(2).waitLog(t, "invalid client credentials for user alice")
	c.node(2).waitLog(t, "unknown user mallory")

	alice, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(20*time.Second), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	// An idempotent producer that may write to no topic is refused its
	// producer id (CLUSTER_AUTHORIZATION_FAILED) before the topic's check.
	if err := produceOne(t, alice, "orders", "refused"); !errors.Is(err, kerr.TopicAuthorizationFailed) &&
		!errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice without an ACL: %v, want an authorization failure", err)
	}

	res, err := c.admin(t).CreateACLs(testCtx(t, 20*time.Second),
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateAcls: %v %s", r.Err, r.ErrMessage)
		}
	}
	alice.Close()
	alice, err = kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("orders"),
		kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	for i := range 10 {
		if err := produceOne(t, alice, "orders", fmt.Sprintf("order-%d", i)); err != nil {
			t.Fatalf("alice producing with WRITE on orders: %v", err)
		}
	}
	got := 0
	ctx := testCtx(t, 30*time.Second)
	for got < 10 {
		fs := alice.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("alice consuming with READ on orders: %v", err)
		}
		got += fs.NumRecords()
	}
	for _, b := range c.nodes {
		b.CheckAlive(t)
	}
}

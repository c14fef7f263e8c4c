package integration

// ACLs enforced on authenticated principals, on a real three-node
// cluster: clients authenticate with SCRAM as alice, bob or the super
// user admin (the brokers' own inter-broker principal), or with a client
// certificate on an SSL listener (User:CN=carol). Each API family is
// allowed by an ACL and refused without one with Kafka's error code, and
// every refusal is logged with the principal, operation and resource.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// aclCluster is a three-node cluster with the StandardAuthorizer: a
// SASL_PLAINTEXT listener (clients, and the brokers' own traffic as
// User:admin), an SSL listener requiring client certificates, and
// CONTROLLER over SSL, where each broker is its certificate's principal
// (User:CN=node<id>). The brokers' principals are the super users, as
// Kafka requires: a broker registers and replicates with CLUSTER_ACTION.
type aclCluster struct {
	*cluster
	sslAddrs []string
	certs    string
}

func startACLCluster(t *testing.T) *aclCluster {
	t.Helper()
	dir := t.TempDir()
	genCerts(t, dir, "node1", "node2", "node3", "carol")
	env := saslClusterEnv()
	maps := map[string]string{
		"GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,CONTROLLER:SSL",
		"GOKAFKA_AUTHORIZER_CLASS_NAME":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// The brokers' principals: admin on the inter-broker
		// listener, their certificates' on CONTROLLER.
		"GOKAFKA_SUPER_USERS":               "User:admin;User:CN=node1;User:CN=node2;User:CN=node3",
		"GOKAFKA_SSL_TRUSTSTORE_LOCATION":   filepath.Join(dir, "ca.pem"),
		"GOKAFKA_SSL_CLIENT_AUTH":           "required",
		"GOKAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
		"GOKAFKA_LOG_LEVEL":                 "debug",
	}
	for k, v := range maps {
		env[k] = v
	}
	for k, v := range kgoSuiteEnv {
		env[k] = v
	}
	c := &aclCluster{certs: dir}
	c.cluster = startClusterWith(t, clusterOpts{
		Env: env,
		NodeEnv: func(id int) map[string]string {
			return map[string]string{"GOKAFKA_SSL_KEYSTORE_LOCATION": filepath.Join(dir, fmt.Sprintf("node%d.pem", id))}
		},
		Listeners: func(port, ctrl int) string {
			ssl := freePort(t)
			c.sslAddrs = append(c.sslAddrs, fmt.Sprintf("127.0.0.1:%d", ssl))
			return fmt.Sprintf("SASL_PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ssl, ctrl)
		},
		// The harness's probes and admin are the super user.
		ClientOpts: []kgo.Opt{kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())},
	})
	return c
}

// as is a client authenticated as user (SCRAM-SHA-256, password
// <user>-secret) that does not retry what it is refused.
func (c *aclCluster) as(t *testing.T, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...),
		kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()),
		kgo.ClientID("acl-" + user), kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second),
		kgo.RecordDeliveryTimeout(15 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// allow creates ACLs through the super user's admin and fails on any error.
func (c *aclCluster) allow(t *testing.T, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := c.admin(t).CreateACLs(testCtx(t, 20*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateAcls %s %s %s: %v %s", r.Name, r.Principal, r.Operation, r.Err, r.ErrMessage)
		}
	}
}

// waitRefusalLogged waits until some node logged a refused authorization
// of principal for operation on resource.
func (c *aclCluster) waitRefusalLogged(t *testing.T, principal, op, resource string) {
	t.Helper()
	eventually(t, 15*time.Second, func() error {
		for _, b := range c.nodes {
			log, err := os.ReadFile(b.logPath)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(ansiEscape.ReplaceAllString(string(log), ""), "\n") {
				if strings.Contains(line, "authorization") && strings.Contains(line, "principal="+principal) &&
					strings.Contains(line, "operation="+op) && strings.Contains(line, "resource="+resource) &&
					strings.Contains(line, "allowed=false") {
					return nil
				}
			}
		}
		return fmt.Errorf("no node logged the refused %s of %s on %s", op, principal, resource)
	})
}

func produceOne(t *testing.T, cl *kgo.Client, topic, value string) error {
	t.Helper()
	return cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func TestACLsEnforcedOnAuthenticatedPrincipalsAcrossTheCluster(t *testing.T) {
	c := startACLCluster(t)
	adm := c.admin(t)
	for _, u := range []string{"alice", "bob"} {
		alterSCRAM(t, adm, u, u+"-secret", kadm.ScramSha256)
	}
	for _, topic := range []string{"orders", "shared-public", "shared-secret", "hidden", "certs"} {
		c.createTopic(t, topic, 3, nil)
	}
	// Credentials reach every node through the metadata log; wait until
	// alice and bob authenticate on each.
	for _, addr := range c.addrs() {
		for _, u := range []string{"alice", "bob"} {
			eventually(t, 20*time.Second, func() error {
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: u, Pass: u + "-secret"}.AsSha256Mechanism()), kgo.RequestRetries(0))
				if err != nil {
					return err
				}
				defer cl.Close()
				return cl.Ping(testCtx(t, 10*time.Second))
			})
		}
	}

	t.Run("super user needs no ACL", func(t *testing.T) {
		cl := c.client(t)
		if err := produceOne(t, cl, "hidden", "from-admin"); err != nil {
			t.Fatalf("admin, a super user, producing: %v", err)
		}
	})

	t.Run("produce allowed and denied", func(t *testing.T) {
		c.allow(t, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead))
		if err := produceOne(t, c.as(t, "alice"), "orders", "a1"); err != nil {
			t.Fatalf("alice, allowed WRITE on orders: %v", err)
		}
		// Not idempotent: bob may write to no topic, so an idempotent
		// producer would already be refused its producer id.
		err := produceOne(t, c.as(t, "bob", kgo.DisableIdempotentWrite()), "orders", "b1")
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("bob producing to orders without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		c.waitRefusalLogged(t, "User:bob", "DESCRIBE", "orders")
		// And a Produce request itself, sent past Metadata: refused per
		// partition with WRITE checked.
		leader := c.leader(t, "orders", 0).Leader
		req := produceRequest(9, 1, "orders", 0, buildBatch([][]byte{[]byte("b2")}, time.Now().UnixMilli()))
		bob := c.as(t, "bob")
		resp, err := bob.Broker(int(leader)).Request(testCtx(t, 15*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.(*kmsg.ProduceResponse)
		if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("bob's Produce request: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
		c.waitRefusalLogged(t, "User:bob", "WRITE", "orders")
	})

	t.Run("consume without group READ", func(t *testing.T) {
		// alice may read orders but holds no ACL on group g-orders.
		alice := c.as(t, "alice")
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKeys = []string{"g-orders"}
		resp, err := find.RequestWith(testCtx(t, 15*time.Second), alice)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("FindCoordinator for g-orders: %+v, want GROUP_AUTHORIZATION_FAILED", resp.Coordinators)
		}
		c.waitRefusalLogged(t, "User:alice", "DESCRIBE", "g-orders")
		// An OffsetCommit sent to the coordinator itself (kgo would stop
		// at FindCoordinator): READ on the group is checked.
		coord := kmsg.NewPtrFindCoordinatorRequest()
		coord.CoordinatorKeys = []string{"g-orders"}
		cresp, err := coord.RequestWith(testCtx(t, 15*time.Second), c.client(t))
		if err != nil || len(cresp.Coordinators) != 1 || cresp.Coordinators[0].ErrorCode != 0 {
			t.Fatalf("the super user's FindCoordinator: %v %+v", err, cresp)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation = "g-orders", -1
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "orders"
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Offset = 1
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		oresp, err := alice.Broker(int(cresp.Coordinators[0].NodeID)).Request(testCtx(t, 15*time.Second), commit)
		if err != nil {
			t.Fatal(err)
		}
		if code := oresp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("OffsetCommit to g-orders: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
		c.waitRefusalLogged(t, "User:alice", "READ", "g-orders")
		// With READ on the group, alice consumes in it.
		c.allow(t, kadm.NewACLs().Groups("g-orders").Allow("User:alice").Operations(kadm.OpRead))
		cons := c.as(t, "alice", kgo.ConsumerGroup("g-orders"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(30*time.Second))
		ctx := testCtx(t, 30*time.Second)
		for {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("alice consuming in g-orders: %v", err)
			}
			if fs.NumRecords() > 0 {
				if v := string(fs.Records()[0].Value); v != "a1" {
					t.Fatalf("alice consumed %q, want a1", v)
				}
				break
			}
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("alice committing in g-orders: %v", err)
		}
	})

	t.Run("transactional producer without the transactional id ACL", func(t *testing.T) {
		txn := func() error {
			cl := c.as(t, "alice", kgo.TransactionalID("tx-alice-1"), kgo.TransactionTimeout(30*time.Second))
			ctx := testCtx(t, 30*time.Second)
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			if err := produceOne(t, cl, "orders", "in-txn"); err != nil {
				cl.EndTransaction(ctx, kgo.TryAbort)
				return err
			}
			return cl.EndTransaction(ctx, kgo.TryCommit)
		}
		if err := txn(); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
			t.Fatalf("a transaction without WRITE on tx-alice-1: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
		}
		c.waitRefusalLogged(t, "User:alice", "DESCRIBE", "tx-alice-1")
		// A prefixed ACL on tx-alice- lets every such id through.
		c.allow(t, kadm.NewACLs().TransactionalIDs("tx-alice-").ResourcePatternType(kadm.ACLPatternPrefixed).
			Allow("User:alice").Operations(kadm.OpWrite))
		if err := txn(); err != nil {
			t.Fatalf("a transaction with WRITE on the prefix tx-alice-: %v", err)
		}
	})

	t.Run("prefixed pattern and DENY precedence", func(t *testing.T) {
		// Everyone may read topics shared-*, but bob is denied
		// shared-secret: DENY wins over the prefixed ALLOW.
		c.allow(t, kadm.NewACLs().Topics("shared-").ResourcePatternType(kadm.ACLPatternPrefixed).
			Allow("User:*").Operations(kadm.OpRead))
		c.allow(t, kadm.NewACLs().Topics("shared-secret").Deny("User:bob").Operations(kadm.OpRead))
		admin := c.client(t)
		for _, topic := range []string{"shared-public", "shared-secret"} {
			if err := produceOne(t, admin, topic, topic); err != nil {
				t.Fatal(err)
			}
		}
		// kgo sends the newest Fetch the broker serves, by topic id.
		listed, err := c.admin(t).ListTopics(testCtx(t, 15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string][16]byte{}
		for _, d := range listed {
			ids[d.Topic] = d.ID
		}
		fetch := func(user, topic string) int16 {
			t.Helper()
			leader := c.leader(t, topic, 0).Leader
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = topic, ids[topic]
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := c.as(t, user).Broker(int(leader)).Request(testCtx(t, 15*time.Second), req)
			if err != nil {
				t.Fatal(err)
			}
			fr := resp.(*kmsg.FetchResponse)
			if fr.ErrorCode != 0 {
				return fr.ErrorCode
			}
			return fr.Topics[0].Partitions[0].ErrorCode
		}
		for _, tc := range []struct {
			user, topic string
			want        int16
		}{
			{"alice", "shared-public", 0},
			{"alice", "shared-secret", 0},
			{"bob", "shared-public", 0},
			{"bob", "shared-secret", kerr.TopicAuthorizationFailed.Code},
			{"bob", "hidden", kerr.TopicAuthorizationFailed.Code},
		} {
			if got := fetch(tc.user, tc.topic); got != tc.want {
				t.Errorf("%s fetching %s: %v, want %v", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		}
		c.waitRefusalLogged(t, "User:bob", "READ", "shared-secret")
	})

	t.Run("Metadata hides unauthorized topics", func(t *testing.T) {
		for user, want := range map[string][]string{
			// orders (READ, WRITE imply DESCRIBE), shared-* (READ).
			"alice": {"orders", "shared-public", "shared-secret"},
			// bob's DENY READ on shared-secret does not deny DESCRIBE.
			"bob": {"shared-public", "shared-secret"},
		} {
			topics, err := kadm.NewClient(c.as(t, user)).ListTopics(testCtx(t, 15*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			got := topics.Names()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s lists topics %v, want %v", user, got, want)
			}
		}
		// Named explicitly, an undescribable topic answers
		// TOPIC_AUTHORIZATION_FAILED, whether or not it exists.
		req := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{"hidden", "no-such-topic"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(testCtx(t, 15*time.Second), c.as(t, "alice"))
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range resp.Topics {
			if tp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("alice's Metadata for %s: %v, want TOPIC_AUTHORIZATION_FAILED", *tp.Topic, kerr.ErrorForCode(tp.ErrorCode))
			}
		}
		c.waitRefusalLogged(t, "User:alice", "DESCRIBE", "hidden")
	})

	t.Run("mTLS principal authorized by an ACL", func(t *testing.T) {
		carol, err := kgo.NewClient(kgo.SeedBrokers(c.sslAddrs...), kgo.DialTLSConfig(clientTLS(t, c.certs, "carol")),
			kgo.ClientID("acl-carol"), kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer carol.Close()
		if err := produceOne(t, carol, "certs", "c1"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("carol without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		c.waitRefusalLogged(t, "User:CN=carol", "DESCRIBE", "certs")
		c.allow(t, kadm.NewACLs().Topics("certs").Allow("User:CN=carol").Operations(kadm.OpWrite))
		eventually(t, 20*time.Second, func() error { return produceOne(t, carol, "certs", "c2") })
		if err := produceOne(t, carol, "orders", "c3"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("carol producing to orders: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})

	// Every refusal above left the cluster serving the others.
	if err := produceOne(t, c.as(t, "alice"), "orders", "a-last"); err != nil {
		t.Fatalf("alice after the refusals: %v", err)
	}
	for _, b := range c.nodes {
		b.CheckAlive(t)
	}
}

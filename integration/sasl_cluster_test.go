package integration

// A three-node cluster whose brokers reach each other over SASL: the
// inter-broker listener is SASL_PLAINTEXT with SCRAM-SHA-512 and the
// bootstrap admin's credentials, so every replica fetch and transaction
// marker authenticates. Each node also has a PLAINTEXT listener (the
// harness's probes and admin) and a CONTROLLER one (raft).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslClusterEnv is what every node of a SASL cluster is configured with.
func saslClusterEnv() map[string]string {
	return map[string]string{
		"GOKAFKA_SASL_ENABLED_MECHANISMS":                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"GOKAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL":                "SCRAM-SHA-512",
		"GOKAFKA_INTER_BROKER_LISTENER_NAME":                          "SASL_PLAINTEXT",
		"GOKAFKA_GOKAFKA_SCRAM_BOOTSTRAP_USERS":                       "SCRAM-SHA-512=[name=admin,password=admin-secret] SCRAM-SHA-256=[name=kgo,password=kgo-secret]",
		"GOKAFKA_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG": plainJAAS,
		// The broker's own credentials, written as an environment
		// variable can name them (dots for the mechanism's dashes).
		"GOKAFKA_LISTENER_NAME_SASL_PLAINTEXT_SCRAM_SHA_512_SASL_JAAS_CONFIG": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
	}
}

type saslCluster struct {
	*cluster
	saslPorts []int
}

func (c *saslCluster) saslAddrs() []string {
	var out []string
	for _, p := range c.saslPorts {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

// startSASLCluster is startCluster with a SASL_PLAINTEXT inter-broker
// listener on every node.
func startSASLCluster(t *testing.T, env map[string]string) *saslCluster {
	t.Helper()
	const n = 3
	ports, saslPorts, ctrl := make([]int, n), make([]int, n), make([]int, n)
	var voters []string
	for i := range n {
		ports[i], saslPorts[i], ctrl[i] = freePort(t), freePort(t), freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
	}
	c := &saslCluster{cluster: &cluster{t: t, paused: map[int32]bool{}}, saslPorts: saslPorts}
	for i := range n {
		settings := map[string]string{}
		for _, m := range []map[string]string{clusterDefaults, saslClusterEnv(), env} {
			for k, v := range m {
				settings[k] = v
			}
		}
		settings["GOKAFKA_NODE_ID"] = strconv.Itoa(i + 1)
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], saslPorts[i], ctrl[i])
		settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = strings.Join(voters, ",")
		c.nodes = append(c.nodes, newBroker(t, brokerOpts{Port: ports[i], Env: settings}))
	}
	c.boot(t)
	return c
}

func TestSASLClusterReplicatesOverSASLAndSharesSCRAMCredentials(t *testing.T) {
	c := startSASLCluster(t, nil)

	// Replication: followers fetch from the leader's SASL_PLAINTEXT
	// listener, authenticated as admin; acks=all needs all of them.
	c.createTopic(t, "sasl-replicated", 3, nil)
	p := c.client(t, kgo.DefaultProduceTopic("sasl-replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 30 {
		if err := p.ProduceSync(testCtx(t, 20*time.Second), kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	for part := range int32(3) {
		c.waitFullISR(t, "sasl-replicated", part)
	}

	// SCRAM credentials: altered through one node, visible on every one.
	adm := kadm.NewClient(c.probes[1])
	res, err := adm.AlterUserSCRAMs(testCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "sue", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "sue-256"},
		{User: "sue", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "sue-512"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["sue"]; r.Err != nil {
		t.Fatalf("sue: %v", r.Err)
	}
	// kadm refuses too few iterations itself; the broker does too.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "tim", 1, 1024, []byte("salt"), []byte("salted")
	raw.Upsertions = append(raw.Upsertions, up)
	rawResp, err := raw.RequestWith(testCtx(t, 20*time.Second), c.probes[2])
	if err != nil {
		t.Fatal(err)
	}
	if r := rawResp.Results; len(r) != 1 || r[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Fatalf("tim with 1024 iterations: %+v, want UNACCEPTABLE_CREDENTIAL", r)
	}
	for id := range c.nodes {
		eventually(t, 20*time.Second, func() error {
			d, err := kadm.NewClient(c.probes[id]).DescribeUserSCRAMs(testCtx(t, 10*time.Second), "sue", "admin", "tim")
			if err != nil {
				return err
			}
			sue := d["sue"]
			if sue.Err != nil || len(sue.CredInfos) != 2 || sue.CredInfos[1].Iterations != 8192 {
				return fmt.Errorf("node %d: sue %+v", id+1, sue)
			}
			if d["admin"].Err != nil || len(d["admin"].CredInfos) != 1 {
				return fmt.Errorf("node %d: admin %+v", id+1, d["admin"])
			}
			if !errors.Is(d["tim"].Err, kerr.ResourceNotFound) {
				return fmt.Errorf("node %d: tim %+v, want RESOURCE_NOT_FOUND", id+1, d["tim"])
			}
			return nil
		})
		// And each node authenticates with it.
		cl := saslClient(t, c.saslAddrs()[id], scram.Auth{User: "sue", Pass: "sue-512"}.AsSha512Mechanism(), kgo.SeedBrokers(c.saslAddrs()[id]))
		if err := cl.Ping(testCtx(t, 10*time.Second)); err != nil {
			t.Fatalf("SCRAM-SHA-512 on node %d: %v", id+1, err)
		}
	}

	// Deleted, the credential no longer authenticates anywhere.
	del, err := adm.AlterUserSCRAMs(testCtx(t, 20*time.Second), []kadm.DeleteSCRAM{{User: "sue", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || del.Error() != nil {
		t.Fatalf("delete: %v %v", err, del.Error())
	}
	eventually(t, 20*time.Second, func() error {
		for id := range c.nodes {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.saslAddrs()[id]), kgo.SASL(scram.Auth{User: "sue", Pass: "sue-512"}.AsSha512Mechanism()), kgo.RequestRetries(0))
			if err != nil {
				return err
			}
			err = cl.Ping(testCtx(t, 10*time.Second))
			cl.Close()
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				return fmt.Errorf("node %d after the delete: %v", id+1, err)
			}
		}
		return nil
	})
}

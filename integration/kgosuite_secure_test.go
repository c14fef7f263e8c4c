package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// secureSuiteCluster is a three-node cluster secured as a production one
// is, for the franz-go suite's secured run:
//
//   - SSL, the clients' listener, with client certificates required;
//   - SASL_SSL, the inter-broker listener: replica fetches, transaction
//     markers and the brokers' other requests to each other authenticate
//     with SCRAM-SHA-512 as the seeded user admin, over TLS;
//   - SASL_PLAINTEXT, the listener franz-go's TestSCRAMAuth,
//     TestSCRAMAuthBadCredentials and TestOAuthAuth dial: they build their
//     clients without the suite's TLS config (kgo helpers_test.go), so
//     this one listener carries SASL without TLS;
//   - CONTROLLER, the metadata quorum's, over SSL.
//
// It returns the cluster (its addrs are the SSL listeners) and the
// SASL_PLAINTEXT addresses.
func secureSuiteCluster(t *testing.T, dir string, env map[string]string) (*cluster, []string) {
	t.Helper()
	var saslAddrs []string
	o := tlsClusterOpts(t, dir, env)
	for k, v := range map[string]string{
		"GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP":       "SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SSL",
		"GOKAFKA_INTER_BROKER_LISTENER_NAME":           "SASL_SSL",
		"GOKAFKA_SASL_ENABLED_MECHANISMS":              "SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"GOKAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "SCRAM-SHA-512",
		"GOKAFKA_GOKAFKA_SCRAM_BOOTSTRAP_USERS":        "SCRAM-SHA-512=[name=admin,password=admin-secret] SCRAM-SHA-256=[name=kgo,password=kgo-secret]",
		// The broker's own credentials on the inter-broker listener.
		"GOKAFKA_LISTENER_NAME_SASL_SSL_SCRAM_SHA_512_SASL_JAAS_CONFIG": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
	} {
		if _, set := env[k]; !set {
			o.Env[k] = v
		}
	}
	o.Listeners = func(port, ctrl int) string {
		saslSSL, saslPlain := freePort(t), freePort(t)
		saslAddrs = append(saslAddrs, fmt.Sprintf("127.0.0.1:%d", saslPlain))
		return fmt.Sprintf("SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d",
			port, saslSSL, saslPlain, ctrl)
	}
	return startClusterWith(t, o), saslAddrs
}

// TestFranzGoSuiteSecured runs franz-go's pkg/kgo suite against a cluster
// with TLS on every listener (KGO_TEST_TLS: every test's client connects
// with TLS and a certificate of the cluster's CA), the brokers
// authenticating to each other with SCRAM over SASL_SSL, and a SASL
// listener for the suite's own authentication tests: KGO_TEST_SCRAM_SEEDS
// and KGO_TEST_SCRAM (the seeded SCRAM-SHA-256 user kgo) for TestSCRAMAuth
// and TestSCRAMAuthBadCredentials, KGO_TEST_OAUTH_SEEDS for TestOAuthAuth
// (unsecured tokens, an expired one refused with invalid_token). Only
// TestIssueProduceBrokerTooOldFailsRecords may skip (expectedKgoSkips).
//
// franz-go v1.22.3's TestIssue769 sets its own dialer, which kgo refuses
// together with the suite's TLS config, and its nil client then panics
// the test binary: it is not run here, and runs in TestFranzGoSuite.
func TestFranzGoSuiteSecured(t *testing.T) {
	if testing.Short() {
		t.Skip("the franz-go suite takes minutes; skipped with -short")
	}
	dir := t.TempDir()
	c, saslAddrs := secureSuiteCluster(t, dir, kgoSuiteEnv)
	seeds := strings.Join(saslAddrs, ",")
	runKgoSuite(t, c, kgoSuiteRun{
		name: " over TLS with SASL",
		env: []string{
			"KGO_TEST_TLS=ca:" + filepath.Join(dir, "ca.pem") +
				",cert:" + filepath.Join(dir, "client-cert.pem") + ",key:" + filepath.Join(dir, "client-key.pem"),
			"KGO_TEST_SCRAM_SEEDS=" + seeds,
			"KGO_TEST_SCRAM=kgo:kgo-secret:256",
			"KGO_TEST_OAUTH_SEEDS=" + seeds,
		},
		skip: "^TestIssue769$",
		// The suite's own authentication tests must run and pass here.
		mustPass: []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"},
	})
}

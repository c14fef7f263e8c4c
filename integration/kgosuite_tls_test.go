package integration

import (
	"path/filepath"
	"testing"
)

// TestFranzGoSuiteTLS runs franz-go's pkg/kgo suite with KGO_TEST_TLS
// against a three-node cluster with SSL on every listener (client,
// inter-broker, controller) and client certificates required: every
// test's client connects with TLS and a certificate of the cluster's CA.
//
// franz-go v1.22.3's TestIssue769 sets its own dialer, which kgo refuses
// together with the suite's TLS config, and its nil client then panics
// the test binary: it is skipped here, and runs in TestFranzGoSuite.
func TestFranzGoSuiteTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("the franz-go suite takes minutes; skipped with -short")
	}
	dir := t.TempDir()
	c := startClusterWith(t, tlsClusterOpts(t, dir, kgoSuiteEnv))
	runKgoSuite(t, c, kgoSuiteRun{
		name: " over TLS",
		env: []string{"KGO_TEST_TLS=ca:" + filepath.Join(dir, "ca.pem") +
			",cert:" + filepath.Join(dir, "client-cert.pem") + ",key:" + filepath.Join(dir, "client-key.pem")},
		skip: "^TestIssue769$",
	})
}

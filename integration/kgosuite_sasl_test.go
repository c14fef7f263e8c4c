package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFranzGoSuiteSASL runs franz-go's own authentication tests
// (TestSCRAMAuth, TestSCRAMAuthBadCredentials, TestOAuthAuth), which skip
// in TestFranzGoSuite for want of credentials, against a three-node
// cluster with a SASL_PLAINTEXT listener: KGO_TEST_SCRAM_SEEDS and
// KGO_TEST_OAUTH_SEEDS name it, KGO_TEST_SCRAM the bootstrap-seeded user.
// Each must pass; a skip fails this test.
func TestFranzGoSuiteSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a go test of franz-go's suite; skipped with -short")
	}
	c := startSASLCluster(t, nil)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"}
	cmd := exec.CommandContext(ctx, "go", "test", "github.com/twmb/franz-go/pkg/kgo", "-count=1", "-json", "-timeout", "4m",
		"-run", "^("+strings.Join(want, "|")+")$")
	cmd.Dir = root
	seeds := strings.Join(c.saslAddrs(), ",")
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+strings.Join(c.addrs(), ","),
		"KGO_TEST_RF=3",
		"KGO_TEST_SCRAM_SEEDS="+seeds,
		"KGO_TEST_SCRAM=kgo:kgo-secret:256",
		"KGO_TEST_OAUTH_SEEDS="+seeds,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	results := map[string]string{}
	outputs := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			results[ev.Test] = ev.Action
		case "output":
			if outputs[ev.Test] == nil {
				outputs[ev.Test] = &strings.Builder{}
			}
			outputs[ev.Test].WriteString(ev.Output)
		}
	}
	for _, name := range want {
		if results[name] != "pass" {
			o := ""
			if outputs[name] != nil {
				o = outputs[name].String()
			}
			t.Errorf("%s: %q\n%s", name, results[name], tail(o, 4000))
		}
	}
	if t.Failed() && runErr != nil {
		t.Logf("go test: %v\n%s", runErr, tail(stderr.String(), 4000))
	}
	testReport(t, "franz-go SASL tests against 3 gokafka nodes: "+strings.Join(want, ", ")+" passed")
}

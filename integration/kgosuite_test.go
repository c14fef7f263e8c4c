package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// expectedKgoSkips are the franz-go suite tests allowed to skip against
// gokafka, each for a reason that is not a gokafka fault to fix here:
// TestSCRAMAuth, TestSCRAMAuthBadCredentials and TestOAuthAuth need a SASL
// listener and credentials, which only the secured run
// (TestFranzGoSuiteSecured) gives them, and there they must pass;
// TestIssueProduceBrokerTooOldFailsRecords skips against any broker whose
// ApiVersions lists Produce v0-v2. Kafka 4.x lists them on its broker
// listeners although it no longer serves them (KAFKA-18659): librdkafka
// releases without the fix for librdkafka issue 4956 (Debian's 2.0.2
// among them) compress nothing for a broker that does not list them.
// gokafka lists them for the same reason, so that test skips here as it
// does against Kafka itself.
var expectedKgoSkips = regexp.MustCompile(`SCRAM|OAuth|ProduceBrokerTooOld`)

// TestFranzGoSuite runs franz-go's own pkg/kgo integration suite, from the
// module cache at the version go.mod requires, against a three-node
// gokafka cluster (KGO_TEST_RF=3). Every test must pass, apart from the
// expected skips; the counts are logged for the record.
func TestFranzGoSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the franz-go suite takes minutes; skipped with -short")
	}
	c := startCluster(t, kgoSuiteEnv)
	runKgoSuite(t, c, kgoSuiteRun{})
}

// kgoSuiteEnv is the cluster setting the suite runs need.
var kgoSuiteEnv = map[string]string{
	"GOKAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "3",
}

// kgoSuiteRun is what differs between the suite's runs.
type kgoSuiteRun struct {
	// name tells the runs apart in the report.
	name string
	// env is added to the suite's environment (KGO_TEST_TLS, ...).
	env []string
	// skip is a go test -skip pattern of tests not to run at all.
	skip string
	// mustPass are tests this run must pass, though expectedKgoSkips
	// lets them skip elsewhere.
	mustPass []string
}

// runKgoSuite runs franz-go's pkg/kgo suite against c and checks every
// test passed but the expected skips.
func runKgoSuite(t *testing.T, c *cluster, run kgoSuiteRun) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	args := []string{"test", "github.com/twmb/franz-go/pkg/kgo", "-count=1", "-json", "-timeout", "11m"}
	if pattern := os.Getenv("GOKAFKA_KGO_RUN"); pattern != "" {
		// Narrows the suite to the tests matching this -run pattern,
		// for working on one area; CI runs the whole suite.
		args = append(args, "-run", pattern)
	}
	if run.skip != "" {
		args = append(args, "-skip", run.skip)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+strings.Join(c.addrs(), ","),
		"KGO_TEST_RF=3",
		"KGO_TEST_RECORDS="+envOr("KGO_TEST_RECORDS", "50000"),
	)
	cmd.Env = append(cmd.Env, run.env...)
	start := time.Now()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	type event struct {
		Action string
		Test   string
		Output string
	}
	verbose := os.Getenv("GOKAFKA_KGO_VERBOSE") != ""
	outputCap := 16 << 10
	if verbose {
		outputCap = 64 << 20
	}
	results := map[string]string{}
	// subResults are the subtests' outcomes: a parent passes with a
	// skipped subtest (TestGroupSimple/848 skips when the broker does not
	// advertise KIP-848), so skips are checked at that level too.
	subResults := map[string]string{}
	outputs := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		if strings.Contains(ev.Test, "/") {
			if ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip" {
				subResults[ev.Test] = ev.Action
			}
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			results[ev.Test] = ev.Action
		case "output":
			if outputs[ev.Test] == nil {
				outputs[ev.Test] = &strings.Builder{}
			}
			if outputs[ev.Test].Len() < outputCap {
				outputs[ev.Test].WriteString(ev.Output)
			}
		}
	}
	var passed, skipped, failed []string
	for name, res := range results {
		switch res {
		case "pass":
			passed = append(passed, name)
		case "skip":
			skipped = append(skipped, name)
		case "fail":
			failed = append(failed, name)
		}
	}
	sort.Strings(skipped)
	sort.Strings(failed)
	summary := fmt.Sprintf("franz-go pkg/kgo suite%s against 3 gokafka nodes: %d passed, %d skipped, %d failed in %s",
		run.name, len(passed), len(skipped), len(failed), time.Since(start).Round(time.Second))
	t.Log(summary)
	t.Logf("skipped: %s", strings.Join(skipped, ", "))
	testReport(t, summary+"\nskipped: "+strings.Join(skipped, ", ")+"\nfailed: "+strings.Join(failed, ", "))
	subCounts := map[string]int{}
	var subSkipped []string
	for name, res := range subResults {
		subCounts[res]++
		if res == "skip" {
			subSkipped = append(subSkipped, name)
		}
	}
	sort.Strings(subSkipped)
	t.Logf("subtests: %d passed, %d skipped, %d failed", subCounts["pass"], subCounts["skip"], subCounts["fail"])
	for _, name := range subSkipped {
		if !expectedKgoSkips.MatchString(name) {
			t.Errorf("subtest %s skipped unexpectedly", name)
		}
	}
	for _, name := range failed {
		t.Errorf("%s failed:\n%s", name, outputs[name])
	}
	if verbose {
		// Shows the end of what the tests that passed logged, e.g. the
		// counts a long test reports, while working on one area.
		for _, name := range passed {
			t.Logf("%s passed:\n%s", name, tail(outputs[name].String(), 8000))
		}
	}
	for _, name := range run.mustPass {
		narrowed, _ := regexp.MatchString(os.Getenv("GOKAFKA_KGO_RUN"), name)
		if narrowed && results[name] != "pass" {
			t.Errorf("%s: %q, want pass", name, results[name])
		}
	}
	for _, name := range skipped {
		if !expectedKgoSkips.MatchString(name) {
			t.Errorf("%s skipped unexpectedly:\n%s", name, outputs[name])
		}
	}
	if len(passed) == 0 || runErr != nil && len(failed) == 0 {
		t.Fatalf("the suite did not run cleanly: %v\n%s", runErr, tail(stderr.String(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

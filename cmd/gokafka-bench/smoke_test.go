package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMain lets the test binary stand in for gokafka-bench when the
// scenario runner re-executes itself with -serve-kfake to start the peer.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-serve-kfake") {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  string
	buildErr  error
)

// gokafkaBinary is GOKAFKA_TEST_BINARY, or a gokafka built from this tree
// once for all the smoke tests of this run.
func gokafkaBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("GOKAFKA_TEST_BINARY"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "gokafka-bench-smoke-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(builtDir, "gokafka")
		build := exec.Command("go", "build", "-o", builtBin, "./cmd/gokafka")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building ./cmd/gokafka: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestSmokeScenarioS1 runs scenario s1 for one short round per system
// against a gokafka built from this tree (or GOKAFKA_TEST_BINARY) and
// checks that both systems produced and that the report and JSON say so.
// It does not judge the numbers. Skipped with -short.
func TestSmokeScenarioS1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers; skipped with -short")
	}
	dir := t.TempDir()
	bin := gokafkaBinary(t)
	jsonPath := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-scenario", "s1", "-gokafka-bin", bin, "-rounds", "1", "-duration", "1s", "-json", jsonPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "| records/s ↑") || !strings.Contains(stdout.String(), "gokafka/kfake") {
		t.Errorf("report lacks the records/s row or the ratio column:\n%s", stdout.String())
	}
	var rep struct {
		Scenarios []struct {
			Name   string
			Rounds []struct {
				System  string
				Error   string
				Metrics []struct {
					Name  string
					Value float64
				}
			}
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, b)
	}
	if len(rep.Scenarios) != 1 || len(rep.Scenarios[0].Rounds) != 2 {
		t.Fatalf("JSON report has %+v", rep.Scenarios)
	}
	for _, r := range rep.Scenarios[0].Rounds {
		if r.Error != "" {
			t.Errorf("%s: %s", r.System, r.Error)
		}
		for _, name := range []string{"records/s", "produce requests/s", "records per produce request"} {
			i := slices.IndexFunc(r.Metrics, func(m struct {
				Name  string
				Value float64
			}) bool {
				return m.Name == name
			})
			if i < 0 || r.Metrics[i].Value <= 0 {
				t.Errorf("%s: no %s above zero in %+v", r.System, name, r.Metrics)
			}
		}
	}
}

// smokeRound is one round of one scenario, from the JSON report.
type smokeRound struct {
	System  string
	Error   string
	Metrics []struct {
		Name  string
		Value float64
	}
}

func (r smokeRound) metric(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// runSmoke runs gokafka-bench with args and -json, fails the test on a
// non-zero exit, and returns the rounds of the one scenario run.
func runSmoke(t *testing.T, args ...string) []smokeRound {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	args = append(args, "-gokafka-bin", gokafkaBinary(t), "-rounds", "1", "-json", jsonPath)
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Scenarios []struct {
			Name   string
			Rounds []smokeRound
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, b)
	}
	if len(rep.Scenarios) != 1 {
		t.Fatalf("JSON report has %d scenarios: %+v", len(rep.Scenarios), rep.Scenarios)
	}
	for _, r := range rep.Scenarios[0].Rounds {
		if r.Error != "" {
			t.Errorf("%s: %s", r.System, r.Error)
		}
	}
	return rep.Scenarios[0].Rounds
}

// TestSmokeScenarioS9 runs s9 on one node with a few connections against
// gokafka and kfake and checks that every client connected, that records
// were acknowledged without errors, and that the per-connection figures
// are there. Skipped with -short.
func TestSmokeScenarioS9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers; skipped with -short")
	}
	const conns = 20
	rounds := runSmoke(t, "-scenario", "s9-1n", "-s9-conns", fmt.Sprint(conns), "-s9-interval", "200ms", "-s9-window", "1s")
	if len(rounds) != 2 {
		t.Fatalf("want a gokafka and a kfake round, got %+v", rounds)
	}
	for _, r := range rounds {
		if v, _ := r.metric("connections set up"); v != conns {
			t.Errorf("%s: %v connections set up, want %d", r.System, v, conns)
		}
		if v, _ := r.metric("records acked/s"); v <= 0 {
			t.Errorf("%s: no records acknowledged in the window: %+v", r.System, r.Metrics)
		}
		if v, ok := r.metric("errors (set-up and window)"); !ok || v != 0 {
			t.Errorf("%s: errors %v (reported %v)", r.System, v, ok)
		}
		for _, name := range []string{"RSS per connection (growth over idle)", "server CPU per node", "set-up: new client to first ack p99"} {
			if _, ok := r.metric(name); !ok {
				t.Errorf("%s: no %q in %+v", r.System, name, r.Metrics)
			}
		}
	}
}

// TestSmokeScenarioS10 moves a small partition with the throttle set and
// checks that the reassignment completed (the runner fails the round
// otherwise) with latencies before and during it, and that kfake, which
// cannot reassign, was left out. The throttle (2 MB/s for 4 MB, one
// second's burst allowed) keeps the move long enough for the producer to
// send during it. Skipped with -short.
func TestSmokeScenarioS10(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers; skipped with -short")
	}
	rounds := runSmoke(t, "-scenario", "s10-throttled", "-s10-bytes", "4MB", "-s10-before", "500ms", "-s10-throttle", "2MB", "-s10-rate", "200")
	if len(rounds) != 1 || rounds[0].System != sysGokafka {
		t.Fatalf("want one gokafka round, got %+v", rounds)
	}
	r := rounds[0]
	if v, _ := r.metric("reassignment: request to done"); v <= 0 {
		t.Errorf("no reassignment time: %+v", r.Metrics)
	}
	if v, _ := r.metric("records sent during"); v <= 0 {
		t.Errorf("no records sent during the move: %+v", r.Metrics)
	}
	if v, ok := r.metric("produce errors (before, during)"); !ok || v != 0 {
		t.Errorf("produce errors %v (reported %v)", v, ok)
	}
}

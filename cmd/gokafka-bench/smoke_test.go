package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for gokafka-bench when the
// scenario runner re-executes itself with -serve-kfake to start the peer.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-serve-kfake") {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
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
	bin := os.Getenv("GOKAFKA_TEST_BINARY")
	if bin == "" {
		bin = filepath.Join(dir, "gokafka")
		build := exec.Command("go", "build", "-o", bin, "./cmd/gokafka")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building ./cmd/gokafka: %v\n%s", err, out)
		}
	}
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
		i := slices.IndexFunc(r.Metrics, func(m struct {
			Name  string
			Value float64
		}) bool {
			return m.Name == "records/s"
		})
		if i < 0 || r.Metrics[i].Value <= 0 {
			t.Errorf("%s: no records/s above zero in %+v", r.System, r.Metrics)
		}
	}
}

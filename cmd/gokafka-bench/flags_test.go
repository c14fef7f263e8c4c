package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlagValidation(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gokafka")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    string
		wantErr string // "" means valid
	}{
		{"-mode produce", ""},
		{"-mode produce -acks all -idempotent -compression zstd -producers 4", ""},
		{"-mode consume -max-bytes 1000", ""},
		{"-mode e2e -rate 500", ""},
		{"-scenario all -gokafka-bin " + bin, ""},
		{"-scenario s5,s1 -gokafka-bin " + bin + " -peer none -rounds 1", ""},
		{"-serve-kfake -kfake-ports 1,2,3", ""},
		{"", "exactly one of -mode"},
		{"-mode produce -scenario s1", "exactly one of -mode"},
		{"-mode bogus", "-mode"},
		{"-mode produce -acks 2", "-acks"},
		{"-mode produce -idempotent", "needs -acks all"},
		{"-mode produce -compression brotli", "-compression"},
		{"-mode produce -record-size 0", "-record-size"},
		{"-mode e2e -record-size 4", "at least 8"},
		{"-mode produce -partitions 0", "-partitions"},
		{"-mode produce -rf 0", "-rf"},
		{"-mode produce -producers 0", "-producers"},
		{"-mode produce -duration 0s", "-duration"},
		{"-mode produce -linger -1ms", "-linger"},
		{"-mode produce -brokers ,", "-brokers"},
		{"-scenario s1", "-gokafka-bin"},
		{"-scenario s11 -gokafka-bin " + bin, "unknown scenario"},
		{"-scenario s1 -gokafka-bin /nonexistent/gokafka", "not a file"},
		{"-scenario s1 -gokafka-bin " + bin + " -peer redpanda", "-peer"},
		{"-scenario s1 -gokafka-bin " + bin + " -rounds 0", "-rounds"},
		{"-scenario s4 -gokafka-bin " + bin + " -consume-bytes 12XB", "-consume-bytes"},
		{"-scenario s9 -gokafka-bin " + bin + " -s9-conns 0", "-s9-conns"},
		{"-scenario s9 -gokafka-bin " + bin + " -s9-window 0s", "-s9-window"},
		{"-scenario s10 -gokafka-bin " + bin + " -s10-bytes 12XB", "-s10-bytes"},
		{"-scenario s10 -gokafka-bin " + bin + " -s10-throttle 0", "-s10-throttle"},
		{"-scenario s9,s10 -gokafka-bin " + bin + " -s9-conns 20 -s10-bytes 4MB", ""},
		{"-serve-kfake", "-kfake-ports"},
		{"-mode produce extra", "unexpected arguments"},
	} {
		_, err := parseFlags(strings.Fields(tc.args), io.Discard)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: unexpected error %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one mentioning %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestScenarioSelection(t *testing.T) {
	for spec, want := range map[string]string{
		"all":       "s1 s2 s3 s4 s5-rf3 s5-1n s6-1n s6-3n s7-0 s7-1k s7-5k s7-10k",
		"s7":        "s7-0 s7-1k s7-5k s7-10k",
		"s5":        "s5-rf3 s5-1n",
		"s6-3n,s1":  "s6-3n s1",
		"s1,s1, s2": "s1 s2",
		"s9":        "s9-3n s9-1n",
		"s10":       "s10-free s10-throttled",
		"s8,s9-1n":  "s8 s9-1n",
	} {
		scs, err := selectScenarios(spec)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		var names []string
		for _, sc := range scs {
			names = append(names, sc.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%q selects %q, want %q", spec, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "256MiB": 256 << 20, "10 KB": 10000, "5": 5, "7B": 7, "2GB": 2e9} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1MiB", "1.5GiB", "99999999999999GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

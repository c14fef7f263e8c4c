package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses must not shift the
	// fields; utime is 250 ticks and stime 50, 3 s in all at 100 Hz.
	stat := "4242 (go (weird) name) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 12 0 123456 1000000 2500 18446744073709551615\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if got != 3*time.Second {
		t.Errorf("cpu = %v, want 3s", got)
	}
	for _, bad := range []string{"", "1 (x S 1 2", "1 (x) S 1 2 3", "1 (x) S 1 1 1 1 1 1 1 1 1 1 x 1 1"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) accepted", bad)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tgokafka\nVmPeak:\t  900000 kB\nVmRSS:\t   12345 kB\nThreads:\t9\n"
	got, err := parseVmRSS([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if got != 12345*1024 {
		t.Errorf("rss = %d", got)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		if _, err := parseVmRSS([]byte(bad)); err == nil {
			t.Errorf("parseVmRSS(%q) accepted", bad)
		}
	}
}

func TestOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn a little CPU so the reading is not trivially zero.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = strings.Repeat("x", x%64)
	}
	cpu, err := processCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("processCPU(self) = %v, %v", cpu, err)
	}
	rss, err := processRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("processRSS(self) = %v, %v", rss, err)
	}
}

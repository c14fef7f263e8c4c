package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports (the kernel fixes the
// user-visible value whatever CONFIG_HZ is), and reading it with sysconf
// would need cgo.
const clockTicks = 100

// parseStatCPU returns utime+stime from the contents of /proc/PID/stat.
// The second field (comm) is parenthesised and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no ')' closing the command name")
	}
	fields := strings.Fields(string(stat[end+1:]))
	// After comm: state(3) ppid(4) … utime(14) stime(15); fields[0] is
	// field 3.
	const utimeIdx, stimeIdx = 14 - 3, 15 - 3
	if len(fields) <= stimeIdx {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	ut, err := strconv.ParseUint(fields[utimeIdx], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %v", err)
	}
	st, err := strconv.ParseUint(fields[stimeIdx], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %v", err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// parseVmRSS returns the VmRSS line of /proc/PID/status in bytes.
func parseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %v", err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// processCPU is the CPU time (user+system) the process pid has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// processRSS is the resident set size of process pid in bytes.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

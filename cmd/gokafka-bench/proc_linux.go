package main

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a server should the load generator die
// without stopping it. Pdeathsig follows the OS thread that started the
// child; the Go runtime ends a thread only when a goroutine locked to it
// exits, which this program never does.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// dropPageCache writes back dirty pages and drops the clean page cache,
// so that every round starts with free memory to write into.
func dropPageCache() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0)
}

// openFilesLimit is the hard RLIMIT_NOFILE, which a Go server raises its
// own soft limit to.
func openFilesLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Max, true
}

// raiseOpenFilesLimit raises this process's soft RLIMIT_NOFILE to its hard
// limit (the Go runtime does so at start since Go 1.19; this makes it
// explicit for the many client connections of s9) and returns the soft
// limit in force.
func raiseOpenFilesLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
		}
	}
	return rl.Cur, true
}

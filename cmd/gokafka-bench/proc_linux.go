package main

import (
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

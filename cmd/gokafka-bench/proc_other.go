//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

// dieWithParent does nothing where there is no parent-death signal; the
// CPU and memory readings need Linux's /proc anyway.
func dieWithParent(*exec.Cmd) {}

func dropPageCache() error { return errors.New("only on Linux") }

func openFilesLimit() (uint64, bool) { return 0, false }

func raiseOpenFilesLimit() (uint64, bool) { return 0, false }

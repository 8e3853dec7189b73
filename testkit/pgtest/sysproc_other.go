//go:build !linux

package pgtest

import "syscall"

// sysProcAttr: without Linux's parent-death signal, Main must stop the
// server.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

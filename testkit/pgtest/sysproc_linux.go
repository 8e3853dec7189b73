package pgtest

import "syscall"

// sysProcAttr kills PGlite when the test binary's starting thread dies, so
// a crashed or timed-out test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// Package proc runs one tool process in its own process group, with stdin
// fed from memory, stdout and stderr captured up to a cap, and the whole group
// killed when the context ends or the process exits. Under choir-agent's
// sandbox (agent/sandbox) the process runs as the workspace's owner, first
// in line for the OOM killer.
package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"choir/agent/sandbox"
)

// Spec describes one run.
type Spec struct {
	Path string   // the executable
	Args []string // argv[1:]
	Dir  string   // working directory
	Env  []string // the whole environment; nil means empty
	// Stdin is written to the process's standard input, which is then
	// closed; nil gives it /dev/null.
	Stdin []byte
	// StdoutCap and StderrCap bound what is kept of each stream.
	StdoutCap, StderrCap int
	// Drain bounds the wait for the output pipes to close once the group is
	// dead (a process that left the group may still hold them); default 2s.
	Drain time.Duration
}

// Result is a finished run.
type Result struct {
	Stdout, Stderr Output
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Stopped is the context's error when the context ended the run (the
	// process group was then killed), nil otherwise.
	Stopped error
	// OOMKilled: SIGKILL ended the process while the container's OOM killer
	// was killing (tools are its first choice).
	OOMKilled bool
}

// Run starts the process, waits for it and kills its process group: at once
// when ctx ends, and after the leader exits, so no child outlives the call
// (a daemon that left the group with setsid is out of reach). The error
// reports only a process that could not start.
func Run(ctx context.Context, s Spec) (Result, error) {
	if s.Drain <= 0 {
		s.Drain = 2 * time.Second
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return Result{}, fmt.Errorf("stderr pipe: %w", err)
	}
	var inR, inW *os.File
	if s.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return Result{}, fmt.Errorf("stdin pipe: %w", err)
		}
	}

	oomBefore, oomKnown := sandbox.OOMKills()
	end := sandbox.Begin()
	defer end()
	cmd := sandbox.Command(context.Background(), s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdout = outW
	cmd.Stderr = errW
	if inR != nil {
		cmd.Stdin = inR
	}
	cmd.SysProcAttr.Setpgid = true
	err = cmd.Start()
	closeAll(outW, errW, inR) // the child has its copies
	if err != nil {
		closeAll(outR, errR, inW)
		return Result{}, err
	}
	pgid := cmd.Process.Pid

	stdout, stderr := NewCapture(s.StdoutCap), NewCapture(s.StderrCap)
	drained := make(chan struct{}, 2)
	go drain(outR, stdout, drained)
	go drain(errR, stderr, drained)
	if inW != nil {
		go func() {
			_, _ = inW.Write(s.Stdin) // EPIPE when the process does not read it
			_ = inW.Close()
		}()
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var stopped error
	select {
	case <-exited:
	case <-ctx.Done():
		stopped = ctx.Err()
		killGroup(pgid)
		<-exited
	}
	killGroup(pgid) // children the leader left behind

	timer := time.NewTimer(s.Drain)
	for n := 0; n < 2; {
		select {
		case <-drained:
			n++
		case <-timer.C:
			closeAll(outR, errR) // a reader blocked on a pipe returns
			timer.Reset(s.Drain)
		}
	}
	timer.Stop()
	closeAll(outR, errR, inW) // inW: unblocks a writer whose reader left the group

	r := Result{Stdout: stdout.Output(), Stderr: stderr.Output(), ExitCode: cmd.ProcessState.ExitCode(), Stopped: stopped}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = ws.Signal().String()
		if ws.Signal() == syscall.SIGKILL && oomKnown {
			after, _ := sandbox.OOMKills()
			r.OOMKilled = after > oomBefore
		}
	}
	return r, nil
}

func drain(r io.Reader, c *Capture, done chan<- struct{}) {
	_, _ = io.Copy(c, r)
	done <- struct{}{}
}

// killGroup kills every process in the group; ESRCH (already gone) is the
// usual answer after a clean exit.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

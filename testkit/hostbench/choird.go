package hostbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// StartChoird runs choird on the home with the extra arguments and
// environment, in its own process group (a Ctrl-C at the terminal reaches
// the benchmark, which stops choird in order), until StopChoird; it
// returns once ready answers, or with choird's last words if it exits
// first, or after within.
func (h *Host) StartChoird(ctx context.Context, args, env []string, within time.Duration, ready func(context.Context) error) error {
	logf, err := os.Create(h.choirdStderr())
	if err != nil {
		return err
	}
	h.choird = exec.Command(filepath.Join(h.Bin, "choird"), append([]string{"--home", h.Home}, args...)...)
	if len(env) > 0 {
		h.choird.Env = append(os.Environ(), env...)
	}
	h.choird.Stderr = logf
	h.choird.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.choird.Start(); err != nil {
		logf.Close()
		h.choird = nil
		return err
	}
	h.choirdDone = make(chan error, 1)
	go func() { h.choirdDone <- h.choird.Wait(); logf.Close() }()
	deadline := time.Now().Add(within)
	for {
		if err := ready(ctx); err == nil {
			return nil
		}
		if err := h.ChoirdExited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("choird did not answer within %s", minutes(within))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *Host) choirdStderr() string { return filepath.Join(h.Work, "choird.stderr") }

// ChoirdPID is choird's pid, 0 before StartChoird.
func (h *Host) ChoirdPID() int {
	if h.choird == nil {
		return 0
	}
	return h.choird.Process.Pid
}

// ChoirdRunning reports whether StartChoird started choird, so that
// StopChoird has something to stop.
func (h *Host) ChoirdRunning() bool { return h.choird != nil && h.choirdDone != nil }

// ChoirdExited returns an error with the end of its output once choird
// has exited, nil while it runs.
func (h *Host) ChoirdExited() error {
	select {
	case err := <-h.choirdDone:
		h.choirdDone <- err
		tail, _ := os.ReadFile(h.choirdStderr())
		return fmt.Errorf("choird exited: %v\n%s", err, LastLines(tail, 15))
	default:
		return nil
	}
}

// StopChoird asks choird to stop (SIGTERM: it stops its agents
// gracefully) and waits for it, killing it at once when force is closed
// (a second signal) or after wait.
func (h *Host) StopChoird(force <-chan struct{}, wait time.Duration) {
	if !h.ChoirdRunning() {
		return
	}
	h.choird.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.choirdDone:
	case <-force:
		h.choird.Process.Kill()
		<-h.choirdDone
	case <-time.After(wait):
		fmt.Fprintf(h.Stderr, "%s: choird did not stop within %s: killing it\n", h.Name, minutes(wait))
		h.choird.Process.Kill()
		<-h.choirdDone
	}
}

// minutes says a whole number of minutes as a person would ("3 minutes").
func minutes(d time.Duration) string {
	if d%time.Minute != 0 {
		return d.String()
	}
	if d == time.Minute {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit"
)

// TestChoirdNotifiesSystemd runs choird as systemd would run it under
// choird.service: a notify socket (abstract, as systemd's own is not),
// a watchdog, and stderr as the journal's stream. READY=1 arrives only
// once the admin socket answers, WATCHDOG=1 pings arrive, SIGTERM brings
// STOPPING=1, and the journal gets lines without choird's own time.
func TestChoirdNotifiesSystemd(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	if _, stderr, code := ctlRun(t, home, "", "init"); code != 0 {
		t.Fatalf("init = %d %s", code, stderr)
	}
	env := backends(t, home)

	addr := fmt.Sprintf("@choir-notify-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	stderrPath := filepath.Join(t.TempDir(), "journal")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	fi, _ := stderr.Stat()
	st := fi.Sys().(*syscall.Stat_t)

	cmd := exec.Command(testkit.Build(t, "choir/choird"), "--home", home)
	cmd.Env = append(os.Environ(), append(env, "NOTIFY_SOCKET="+addr, "WATCHDOG_USEC=2000000",
		fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino))...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	journal := func() string { b, _ := os.ReadFile(stderrPath); return string(b) }

	// next returns the next notification, waiting with a deadline.
	next := func(what string) string {
		t.Helper()
		sock.SetReadDeadline(time.Now().Add(60 * time.Second))
		buf := make([]byte, 4096)
		n, _, err := sock.ReadFrom(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v\nchoird's stderr:\n%s", what, err, journal())
		}
		return string(buf[:n])
	}
	var seen []string
	for {
		msg := next("READY=1")
		seen = append(seen, msg)
		if msg == "READY=1" {
			break
		}
	}
	// The admin socket serves when READY arrives: no polling needed.
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status right after READY=1: %v; want choird answering", err)
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{"STATUS=connecting to Postgres", "WATCHDOG=1"} {
		if !strings.Contains(all, want) {
			t.Errorf("before READY=1 choird sent %q; want %s among them", seen, want)
		}
	}

	cmd.Process.Signal(syscall.SIGTERM)
	for msg := ""; msg != "STOPPING=1"; {
		msg = next("STOPPING=1")
		seen = append(seen, msg)
	}
	// Like systemd, keep reading while choird stops (watchdog pings).
	go func() {
		buf := make([]byte, 4096)
		sock.SetReadDeadline(time.Time{})
		for {
			if _, _, err := sock.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("choird exit after SIGTERM = %v; want 0\n%s", err, journal())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("choird did not stop within 60s of SIGTERM:\n%s", journal())
	}

	// The journal stamps each line: choird's lines carry a priority, not a time.
	out := journal()
	if !strings.Contains(out, `<6>{"level":"INFO"`) || !strings.Contains(out, "choird ready") {
		t.Errorf("stderr under JOURNAL_STREAM lacks <6>-prefixed INFO lines:\n%s", out)
	}
	if strings.Contains(out, `"time":`) {
		t.Errorf("stderr under JOURNAL_STREAM still carries choird's own time:\n%s", out)
	}
	// choird.log keeps the time.
	logData, _ := os.ReadFile(filepath.Join(home, "logs", "choird.log"))
	if !strings.Contains(string(logData), `"time":`) {
		t.Errorf("choird.log lost its times:\n%s", logData)
	}
}

package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listen opens the systemd side: a unix datagram socket at addr.
func listen(t *testing.T, addr string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// receive waits (with a deadline) for the next datagram.
func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, _, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no notification arrived: %v", err)
	}
	return string(buf[:n])
}

func addresses(t *testing.T) map[string]string {
	return map[string]string{
		"path":     filepath.Join(t.TempDir(), "notify.sock"),
		"abstract": fmt.Sprintf("@choir-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
	}
}

func TestNotifyReachesTheSocket(t *testing.T) {
	for name, addr := range addresses(t) {
		t.Run(name, func(t *testing.T) {
			c := listen(t, addr)
			t.Setenv("NOTIFY_SOCKET", addr)
			n, err := FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				send func() error
				want string
			}{
				{func() error { return n.Status("connecting to Postgres") }, "STATUS=connecting to Postgres"},
				{func() error { return n.Status("two\nlines") }, "STATUS=two lines"},
				{n.Ready, "READY=1"},
				{n.Stopping, "STOPPING=1"},
			} {
				if err := step.send(); err != nil {
					t.Fatal(err)
				}
				if got := receive(t, c); got != step.want {
					t.Errorf("received %q; want %q", got, step.want)
				}
			}
		})
	}
}

func TestWatchdogPingsUntilStopped(t *testing.T) {
	for name, addr := range addresses(t) {
		t.Run(name, func(t *testing.T) {
			c := listen(t, addr)
			n, err := New(addr)
			if err != nil {
				t.Fatal(err)
			}
			stop := n.StartWatchdog(time.Millisecond, func(err error) { t.Error(err) })
			for i := 0; i < 3; i++ {
				if got := receive(t, c); got != "WATCHDOG=1" {
					t.Fatalf("ping %d = %q; want WATCHDOG=1", i, got)
				}
			}
			stop() // returns once the pinger has ended
			stop() // a second stop is harmless
			// Nothing more arrives once stop has returned: drain what was
			// in flight, then the socket stays silent.
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			buf := make([]byte, 64)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					break
				}
			}
			if err := n.Notify("X=1"); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, c); got != "X=1" {
				t.Errorf("after stop, received %q; want only X=1", got)
			}
		})
	}
}

func TestUnsetSocketIsANoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := FromEnv()
	if err != nil || n.Enabled() {
		t.Fatalf("FromEnv() with NOTIFY_SOCKET unset = enabled %v, %v; want a no-op notifier", n.Enabled(), err)
	}
	if err := n.Ready(); err != nil {
		t.Errorf("Ready() = %v; want nil", err)
	}
	n.StartWatchdog(time.Millisecond, nil)() // starts nothing, stops at once
}

func TestBadAddresses(t *testing.T) {
	for _, addr := range []string{"relative.sock", "vsock:2:1234", " /x"} {
		n, err := New(addr)
		if err == nil || !strings.Contains(err.Error(), "NOTIFY_SOCKET") {
			t.Errorf("New(%q) error = %v; want one naming NOTIFY_SOCKET", addr, err)
		}
		if n.Enabled() {
			t.Errorf("New(%q) is enabled; want a no-op", addr)
		}
	}
	// A path nobody listens on: the error says where.
	n, _ := New(filepath.Join(t.TempDir(), "gone.sock"))
	if err := n.Ready(); err == nil || !strings.Contains(err.Error(), "gone.sock") {
		t.Errorf("Ready() to a missing socket = %v; want an error naming it", err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, c := range []struct {
		usec, pid string
		want      time.Duration
		err       bool
	}{
		{"", "", 0, false},
		{"30000000", "", 15 * time.Second, false},
		{"30000000", "42", 15 * time.Second, false},
		{"30000000", "43", 0, false}, // another process's watchdog
		{"abc", "", 0, true},
		{"0", "", 0, true},
		{"-5", "", 0, true},
		{"99999999999999999999999", "", 0, true},
		{"30000000", "x", 0, true},
		{"30000000", "-1", 0, true},
	} {
		got, err := watchdogInterval(c.usec, c.pid, 42)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("watchdogInterval(%q, %q) = %v, %v; want %v, error %v", c.usec, c.pid, got, err, c.want, c.err)
		}
	}
}

// A listener that stops reading fills its queue; a send then fails after
// sendTimeout instead of blocking the daemon, and the watchdog's stop
// still returns.
func TestFullQueueDoesNotBlock(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "full.sock")
	listen(t, addr) // never read
	n, _ := New(addr)
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = n.Notify("WATCHDOG=1")
	}
	if err == nil || !strings.Contains(err.Error(), "full.sock") {
		t.Fatalf("Notify to a full queue = %v; want an error naming the socket", err)
	}
	stop := n.StartWatchdog(time.Millisecond, nil)
	stop() // returns although every ping times out
}

// Package sdnotify speaks systemd's service notification protocol
// (sd_notify(3)) on the standard library alone.
//
// The wire: one unix datagram per notification, sent to the socket named
// by $NOTIFY_SOCKET, holding newline-separated VAR=VALUE assignments such
// as "READY=1", "STOPPING=1", "WATCHDOG=1" or "STATUS=connecting to
// Postgres". The address is an absolute path, or an abstract-namespace
// name written with a leading '@' (the '@' stands for the NUL byte that
// starts the name on the wire; Go's net package makes that translation).
// With $NOTIFY_SOCKET unset, as when the daemon is started by hand,
// every call is a no-op.
//
// The watchdog: when the unit sets WatchdogSec=, systemd passes it to the
// service as $WATCHDOG_USEC (and $WATCHDOG_PID, the process it is meant
// for); the service sends "WATCHDOG=1" more often than that, and systemd
// kills and (with Restart=) restarts a service that falls silent.
package sdnotify

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sendTimeout bounds one notification's send.
const sendTimeout = time.Second

// Notifier sends notifications to one notify socket. The zero Notifier
// (no socket) sends nothing.
type Notifier struct {
	addr string
}

// FromEnv returns the notifier for $NOTIFY_SOCKET: a no-op one when it is
// unset, and an error naming the variable when it holds an address this
// package cannot reach (neither an absolute path nor '@'-abstract).
func FromEnv() (*Notifier, error) {
	return New(os.Getenv("NOTIFY_SOCKET"))
}

// New returns the notifier for addr ("" gives a no-op notifier).
func New(addr string) (*Notifier, error) {
	if addr != "" && !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return &Notifier{}, fmt.Errorf("NOTIFY_SOCKET=%q: want an absolute socket path or an @abstract name; notifications to systemd are off", addr)
	}
	return &Notifier{addr: addr}, nil
}

// Enabled says whether notifications go anywhere.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != "" }

// Notify sends state (one or more VAR=VALUE lines) as one datagram.
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify systemd at %s: %w", n.addr, err)
	}
	defer conn.Close()
	// A datagram to a socket whose queue is full blocks: a reader that
	// stopped reading must not hold the daemon (its stop above all).
	conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify systemd at %s: %w", n.addr, err)
	}
	return nil
}

// Ready says the service is up (Type=notify units leave "activating").
func (n *Notifier) Ready() error { return n.Notify("READY=1") }

// Stopping says a graceful stop has begun.
func (n *Notifier) Stopping() error { return n.Notify("STOPPING=1") }

// Status sets the one-line status `systemctl status` shows. Newlines in
// s would start new assignments, so they become spaces.
func (n *Notifier) Status(s string) error {
	return n.Notify("STATUS=" + strings.ReplaceAll(s, "\n", " "))
}

// WatchdogInterval reads $WATCHDOG_USEC and $WATCHDOG_PID: the interval
// at which the watchdog must be fed (half of WatchdogSec=, as sd_notify(3)
// advises), or 0 when no watchdog is asked of this process.
func WatchdogInterval() (time.Duration, error) {
	return watchdogInterval(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid())
}

func watchdogInterval(usec, pid string, self int) (time.Duration, error) {
	if usec == "" {
		return 0, nil
	}
	if pid != "" {
		p, err := strconv.Atoi(pid)
		if err != nil || p <= 0 {
			return 0, fmt.Errorf("WATCHDOG_PID=%q: want a process id; the watchdog is not fed", pid)
		}
		if p != self {
			return 0, nil // meant for another process (a parent that exec'd us)
		}
	}
	us, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || us == 0 {
		return 0, fmt.Errorf("WATCHDOG_USEC=%q: want a positive number of microseconds; the watchdog is not fed", usec)
	}
	return time.Duration(us) * time.Microsecond / 2, nil
}

// StartWatchdog sends "WATCHDOG=1" at once and then every interval until
// the returned stop is called; stop returns once the sender has ended. A
// no-op notifier or a zero interval starts nothing.
func (n *Notifier) StartWatchdog(interval time.Duration, onError func(error)) (stop func()) {
	if !n.Enabled() || interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := n.Notify("WATCHDOG=1"); err != nil && onError != nil {
				onError(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

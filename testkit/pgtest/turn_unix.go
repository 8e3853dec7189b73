//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package pgtest

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// A turn is the right to connect to the server, shared by every relay on
// this machine (the test binaries of one go test run each have their own)
// through an exclusive flock on a file named after the server's address.
// Closing the file gives the turn up, also when the process dies.
type turn struct{ f *os.File }

// takeTurn waits for the turn until deadline, or until closing is closed.
func takeTurn(path string, deadline time.Time, closing <-chan struct{}) (*turn, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	backoff := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &turn{f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		if time.Now().Add(backoff).After(deadline) {
			f.Close()
			return nil, errTurnTimeout
		}
		select {
		case <-time.After(backoff):
		case <-closing:
			f.Close()
			return nil, errShuttingDown
		}
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// done gives the turn up.
func (t *turn) done() { t.f.Close() }

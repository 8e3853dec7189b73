//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package pgtest

import "time"

// turn: without flock, relays do not take turns across test binaries;
// each still waits for the server's free slot.
type turn struct{}

func takeTurn(string, time.Time, <-chan struct{}) (*turn, error) { return &turn{}, nil }

func (*turn) done() {}

package rpc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"math"
	"sync"
	"time"
)

// NewToken returns a lease token: 256 random bits, hex-encoded.
func NewToken() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewRequestID returns a random UUID (version 4).
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// session is what the server keeps per open session: the hash of its lease
// token (never the token), the agent it was opened for, its rate limiter,
// its push channel and how many connections and event streams it holds.
// Every field is fixed-size but the event log, which keeps at most
// Limits.EventBacklog events.
type session struct {
	tokenHash [sha256.Size]byte
	agentID   string
	limiter   bucket
	events    *eventLog
	conns     int // connections attributed to it (guarded by the server's lock)
	streams   int // open GET /events streams (guarded by the server's lock)
	beats     int // open heartbeat streams (guarded by the server's lock)
	// ended is cancelled when the session is closed (or opened again):
	// its heartbeat streams end with it.
	ended context.Context
	end   context.CancelFunc
}

// bucket is a token bucket; the caller holds the server's lock.
type bucket struct {
	tokens float64
	last   time.Time
}

// take spends one token, or says how long until one is available.
func (b *bucket) take(now time.Time, rate float64, burst int) (ok bool, wait time.Duration) {
	if b.last.IsZero() {
		b.tokens = float64(burst)
	} else {
		b.tokens = math.Min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// sessions is the table of open sessions.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

// dummyHash is compared against when the session is unknown, so that an
// unknown session and a wrong token take the same time.
var dummyHash = sha256.Sum256([]byte("choir: no such session"))

// check authenticates a token for a session in constant time.
func (s *sessions) check(sessionID, token string) *session {
	got := sha256.Sum256([]byte(token))
	s.mu.Lock()
	sess := s.m[sessionID]
	s.mu.Unlock()
	want := dummyHash
	if sess != nil {
		want = sess.tokenHash
	}
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || sess == nil || token == "" {
		return nil
	}
	return sess
}

func sha256Sum(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Event is one committed event. It has the fields of rpc.Event in the same
// order, so either converts to the other.
type Event struct {
	Rev     int64
	Type    string
	Lane    string
	Payload json.RawMessage
	Hash    string
	Time    time.Time
}

// TimeLayout is how an event's time enters the hash: UTC, microseconds (the
// precision of a Postgres timestamptz), always six digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Hash returns the chain hash of e given the hash of the event before it
// ("" before the first event, rev 1):
//
//	hash = hex(SHA-256(prev ‖ canonical(e)))
//
// where prev is the previous hash as its 64 hex characters and canonical(e)
// is the event without its hash, as the JSON object
//
//	{"lane":L,"payload":P,"rev":N,"time":T,"type":Y}
//
// with members in that (sorted) order, P the Canonical form of the payload
// (null when empty), T the time in TimeLayout and L "" for an event of no
// lane. e.Hash is ignored.
func Hash(prev string, e Event) (string, error) {
	var h Hasher
	return h.Hash(prev, e)
}

// Hasher computes hashes with a reusable buffer. Its zero value is ready;
// it is not safe for concurrent use.
type Hasher struct{ buf []byte }

// Hash is the package's Hash.
func (h *Hasher) Hash(prev string, e Event) (string, error) {
	p := []byte("null")
	if len(e.Payload) > 0 {
		var err error
		if p, err = Canonical(e.Payload); err != nil {
			return "", fmt.Errorf("event %d: payload: %w", e.Rev, err)
		}
	}
	return h.Sum(prev, e, p), nil
}

// Sum is Hash for a payload known to be canonical (nil or empty for none);
// e.Payload is ignored.
func (h *Hasher) Sum(prev string, e Event, canonicalPayload []byte) string {
	buf := append(h.buf[:0], prev...)
	buf = append(buf, `{"lane":`...)
	buf = AppendString(buf, e.Lane)
	buf = append(buf, `,"payload":`...)
	if len(canonicalPayload) == 0 {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, canonicalPayload...)
	}
	buf = append(buf, `,"rev":`...)
	buf = strconv.AppendInt(buf, e.Rev, 10)
	buf = append(buf, `,"time":"`...)
	buf = e.Time.UTC().AppendFormat(buf, TimeLayout)
	buf = append(buf, `","type":`...)
	buf = AppendString(buf, e.Type)
	buf = append(buf, '}')
	h.buf = buf
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// AppendString appends s as a canonical JSON string: as encoding/json
// writes it, U+0000 as U+FFFD.
func AppendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			out, _ := appendCanonicalString(buf, b)
			return out
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// Errors of Verify, for errors.Is.
var (
	// ErrNotConsecutive: an event's revision does not follow the one before.
	ErrNotConsecutive = errors.New("revisions are not consecutive")
	// ErrBroken: an event's hash is not the hash of the event chained to
	// the one before.
	ErrBroken = errors.New("the hash chain is broken")
)

// Break says where and why a run of events does not verify.
type Break struct {
	Rev  int64  // the first event that does not verify
	Type string // its type
	// Got is the hash the event carries and Want the one it should carry;
	// both are empty when the revision is out of place or the payload is
	// not JSON.
	Got, Want string
	Err       error // ErrNotConsecutive, ErrBroken, or why the payload is unreadable
}

func (b *Break) Error() string {
	switch {
	case errors.Is(b.Err, ErrBroken):
		return fmt.Sprintf("event %d (%s) carries hash %s; chained to the event before, it hashes to %s", b.Rev, b.Type, clip(b.Got), b.Want)
	default:
		return fmt.Sprintf("event %d (%s): %v", b.Rev, b.Type, b.Err)
	}
}

func (b *Break) Unwrap() error { return b.Err }

// Verify checks that events are consecutive revisions chained from prev,
// the hash of the event before the first ("" when the first is rev 1):
// each Hash must equal Hash(previous hash, event). The error is a *Break
// naming the first event that fails.
func Verify(prev string, events []Event) error {
	var h Hasher
	for i, e := range events {
		if i > 0 && e.Rev != events[i-1].Rev+1 {
			return &Break{Rev: e.Rev, Type: e.Type, Err: fmt.Errorf("%w: it follows event %d", ErrNotConsecutive, events[i-1].Rev)}
		}
		want, err := h.Hash(prev, e)
		if err != nil {
			return &Break{Rev: e.Rev, Type: e.Type, Err: err}
		}
		if want != e.Hash {
			return &Break{Rev: e.Rev, Type: e.Type, Got: e.Hash, Want: want, Err: ErrBroken}
		}
		prev = want
	}
	return nil
}

// clip shortens a hash an attacker chose before it is echoed.
func clip(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "…"
	}
	return strconv.Quote(s)
}

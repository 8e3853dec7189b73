package lock

import (
	"fmt"
	"slices"
	"strings"
)

// A Mode is how a lock is held: S (shared) or X (exclusive).
type Mode uint8

// The two modes; the zero Mode is invalid.
const (
	S Mode = iota + 1 // shared: readers, any number of owners
	X                 // exclusive: a writer, one owner
)

func (m Mode) String() string {
	switch m {
	case S:
		return "S"
	case X:
		return "X"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "S" or "X", as tool manifests spell them.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "S":
		return S, nil
	case "X":
		return X, nil
	}
	return 0, fmt.Errorf("%w %q: want \"S\" or \"X\"", ErrInvalidMode, s)
}

// A Request asks for one key in one mode; a lockset is a []Request.
type Request struct {
	Key  Key
	Mode Mode
}

// String formats r as the spec does: "workspace:X", "file:src/a.go:S".
func (r Request) String() string { return string(r.Key) + ":" + r.Mode.String() }

// conflicts reports whether a and b, held by different owners, exclude each
// other: their resources overlap and one of them is X.
func conflicts(a, b Request) bool {
	return (a.Mode == X || b.Mode == X) && overlaps(a.Key, b.Key)
}

// canonical appends to set the lockset reqs in canonical form: every key
// checked and canonicalised, each key once in the strongest mode asked for,
// sorted by key. It does not modify reqs.
func canonical(set, reqs []Request) ([]Request, error) {
	for _, r := range reqs {
		if r.Mode != S && r.Mode != X {
			return nil, fmt.Errorf("%w %v for key %q", ErrInvalidMode, r.Mode, r.Key)
		}
		k, err := ParseKey(string(r.Key))
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(set, func(q Request) bool { return q.Key == k }); i >= 0 {
			set[i].Mode = max(set[i].Mode, r.Mode)
			continue
		}
		set = append(set, Request{Key: k, Mode: r.Mode})
	}
	slices.SortFunc(set, func(a, b Request) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return set, nil
}

// formatSet formats a lockset for error messages: "{file:a:S workspace:X}".
func formatSet(set []Request) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, r := range set {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.String())
	}
	b.WriteByte('}')
	return b.String()
}

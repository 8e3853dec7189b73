// Package redact keeps secret values out of everything choir-agent sends:
// replies and notices to the DM, tool results before a model sees them,
// model requests, status reports, committed events and log lines. Each value
// of a bound secret is replaced by a marker naming it, [secret:<name>].
//
// A Redactor holds the secrets in a compiled matcher (Aho-Corasick over the
// forms a value takes in text, see forms.go) and scans a text once, whatever
// the number of secrets. The forms are the raw value, its JSON-escaped forms
// (once and twice, with and without HTML escaping), its URL-escaped forms,
// its lower- and upper-case hex and its base64 at each of the three byte
// alignments. Line breaks, with the spaces around them, are transparent
// while matching, raw or JSON-escaped, so a value folded over several lines
// is still found; the marker then replaces the whole span.
//
// Set swaps the secrets atomically (after GET_SECRETS and every
// secrets_changed); values seen before stay redacted for the life of the
// Redactor, since a rotated-out key may still be live. Values shorter than
// MinLen are not redacted: they would blank out ordinary words.
package redact

import (
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// MinLen is the shortest secret value redacted, counted without its line
// breaks.
const MinLen = 4

// Marker is what replaces a value of the secret called name.
func Marker(name string) string { return "[secret:" + name + "]" }

// Redactor replaces secret values in text. The zero value redacts nothing
// until Set; it is safe for concurrent use.
type Redactor struct {
	mu    sync.Mutex        // serialises Set
	known map[string]string // every value ever set -> the name it was set under
	m     atomic.Pointer[matcher]
}

// New returns a Redactor for secrets (name -> value).
func New(secrets map[string]string) *Redactor {
	r := &Redactor{}
	r.Set(secrets)
	return r
}

// Set makes secrets (name -> value) the ones to redact, in addition to every
// value set before. When two names hold one value, the marker names the
// smaller name.
func (r *Redactor) Set(secrets map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known == nil {
		r.known = map[string]string{}
	}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names))) // the smallest name is set last
	for _, n := range names {
		r.known[secrets[n]] = n
	}
	r.m.Store(compile(r.known))
}

// Len is the number of values being redacted.
func (r *Redactor) Len() int {
	if m := r.load(); m != nil {
		return m.secrets
	}
	return 0
}

func (r *Redactor) load() *matcher {
	if r == nil {
		return nil
	}
	return r.m.Load()
}

// String returns s with every secret value replaced by its marker.
func (r *Redactor) String(s string) string {
	m := r.load()
	if m == nil {
		return s
	}
	spans := scan(m, s, false)
	if len(spans) == 0 {
		return s
	}
	return string(rewrite(m, make([]byte, 0, len(s)), s, spans))
}

// Bytes returns b with every secret value replaced by its marker: b itself
// when it holds none, else a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	m := r.load()
	if m == nil {
		return b
	}
	spans := scan(m, b, false)
	if len(spans) == 0 {
		return b
	}
	return rewrite(m, make([]byte, 0, len(b)), b, spans)
}

// Contains reports whether s holds a secret value in any of its forms.
func (r *Redactor) Contains(s string) bool {
	m := r.load()
	return m != nil && len(scan(m, s, true)) > 0
}

// ContainsBytes is Contains for a byte slice.
func (r *Redactor) ContainsBytes(b []byte) bool {
	m := r.load()
	return m != nil && len(scan(m, b, true)) > 0
}

// Writer returns w with every Write passed through r. A log handler writes
// one record per Write, so a record is redacted whole.
func (r *Redactor) Writer(w io.Writer) io.Writer { return writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

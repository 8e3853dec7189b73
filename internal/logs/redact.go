package logs

import (
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync/atomic"
)

// Redacted replaces a secret wherever one would have been written.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value redacted: shorter ones would blank out
// ordinary words and cannot be protected by redaction anyway.
const minSecretLen = 3

// Redactor removes secret values from text. It is safe for concurrent use;
// Set swaps the secret set atomically.
type Redactor struct {
	r atomic.Pointer[strings.Replacer]
}

// NewRedactor returns a Redactor for the given values.
func NewRedactor(values ...string) *Redactor {
	var r Redactor
	r.Set(values)
	return &r
}

// Set replaces the secret values to redact.
func (r *Redactor) Set(values []string) {
	var forms []string
	for _, v := range values {
		if len(v) < minSecretLen {
			continue
		}
		forms = append(forms, v)
		if q, err := json.Marshal(v); err == nil {
			if esc := string(q[1 : len(q)-1]); esc != v {
				forms = append(forms, esc) // as it appears inside a JSON string
			}
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	r.r.Store(strings.NewReplacer(pairs...))
}

// String returns s with every secret value replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	if rep := r.r.Load(); rep != nil {
		return rep.Replace(s)
	}
	return s
}

// Writer returns w with every write passed through r.
func (r *Redactor) Writer(w io.Writer) io.Writer { return redactWriter{r: r, w: w} }

type redactWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

package kb

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"choir/choird/headless"
)

// Kinds of indexed objects.
const (
	KindClaim       = "claim"       // an OBSERVATION note: an atom that may be promoted
	KindHypothesis  = "hypothesis"  // a HYPOTHESIS note, with its test
	KindHyperthesis = "hyperthesis" // a HYPERTHESIS note, with its bound
	KindConjecture  = "conjecture"  // (claim, test, edge, ΔO, scope)
	KindDrive       = "drive"
	KindBelief      = "belief"
	KindAttestation = "attestation" // a verifier's structured result (never its raw log)
	KindPatch       = "patch"       // a run's diff, by its summary and files
	KindSource      = "source"      // a fetched page, by its URL and type
	KindExtract     = "extract"
)

// Kinds lists every kind, for the search's --kind.
var Kinds = []string{KindClaim, KindHypothesis, KindHyperthesis, KindConjecture, KindDrive, KindBelief,
	KindAttestation, KindPatch, KindSource, KindExtract}

// noteKinds maps the note types that carry knowledge to their kind;
// REQUEST_HELP and REQUEST_VERIFY are the run's business, not knowledge.
var noteKinds = map[headless.NoteType]string{
	headless.NoteObservation: KindClaim,
	headless.NoteHypothesis:  KindHypothesis,
	headless.NoteHyperthesis: KindHyperthesis,
	headless.NoteConjecture:  KindConjecture,
	headless.NoteDrive:       KindDrive,
	headless.NoteBelieve:     KindBelief,
}

// MaxText bounds the text embedded for one object; MaxSnippet the
// snippet a pointer carries.
const (
	MaxText    = 1500
	MaxSnippet = 300
)

// Item is one object a receipt names with typed content: its hash, kind,
// and the text that is embedded and shown. When Body is not nil, the
// object is Body itself (a note, an attestation: receipt bodies that are
// stored in the object store so they can be cited by hash).
type Item struct {
	Object string
	Kind   string
	Text   string
	Body   []byte
}

// noteOrder is the order the fields of a note are written in; other
// string fields follow, sorted by name.
var noteOrder = []string{"claim", "text", "test", "bound", "edge", "delta_o", "scope", "anti_drive", "trigger", "effect"}

// skipped are the note members that say nothing of its content.
var skipped = map[string]bool{"type": true, "cites": true, "retracts": true, "verifiers": true, "budget": true}

// Items returns what rec names with typed content, with the text to
// embed: the kind and the typed fields (claim, test, bound, …), never an
// object's raw bytes. A receipt of another kind, or one it cannot read,
// gives none.
func Items(rec headless.Receipt) []Item {
	switch rec.Kind {
	case headless.KindNote:
		var fields map[string]any
		if json.Unmarshal(rec.Body, &fields) != nil {
			return nil
		}
		t, _ := fields["type"].(string)
		kind, ok := noteKinds[headless.NoteType(t)]
		if !ok {
			return nil
		}
		return one(kind, fieldsText(kind, fields), rec.Body)
	case headless.KindVerifierResults:
		var a headless.Attestation
		if json.Unmarshal(rec.Body, &a) != nil || a.Verifier == "" {
			return nil
		}
		verdict := "failed"
		if a.Passed {
			verdict = "passed"
		}
		parts := []string{"verifier " + a.Verifier + " " + verdict}
		if a.Summary != "" {
			parts = append(parts, "summary: "+a.Summary)
		}
		if a.Signature != "" {
			parts = append(parts, "signature: "+a.Signature)
		}
		return one(KindAttestation, KindAttestation+": "+strings.Join(parts, "; "), rec.Body)
	case headless.KindNetRequest:
		// A page choir.net.fetch brought in: by its URL and what came
		// back, never its body (untrusted content of any size).
		var n struct {
			Method    string `json:"method"`
			URL       string `json:"url"`
			Allowed   bool   `json:"allowed"`
			Status    int    `json:"status"`
			Bytes     int64  `json:"bytes"`
			Truncated bool   `json:"truncated"`
			Source    string `json:"source"`
		}
		if json.Unmarshal(rec.Body, &n) != nil || !n.Allowed || !validHash(n.Source) || n.URL == "" {
			return nil
		}
		t := fmt.Sprintf("%s: %s %s (status %d, %d bytes", KindSource, n.Method, oneLine(n.URL), n.Status, n.Bytes)
		if n.Truncated {
			t += ", truncated"
		}
		return []Item{{Object: n.Source, Kind: KindSource, Text: clip(t+")", MaxText)}}
	case headless.KindPatchReceipt:
		var p struct {
			Hash   string   `json:"hash"`
			Files  []string `json:"files"`
			Answer string   `json:"answer"`
		}
		if json.Unmarshal(rec.Body, &p) != nil || !validHash(p.Hash) {
			return nil
		}
		parts := []string{}
		if p.Answer != "" {
			parts = append(parts, "summary: "+firstLines(p.Answer, 3))
		}
		if len(p.Files) > 0 {
			parts = append(parts, "files: "+strings.Join(p.Files, ", "))
		}
		if len(parts) == 0 {
			return nil
		}
		t := clip(KindPatch+": "+strings.Join(parts, "; "), MaxText)
		return []Item{{Object: p.Hash, Kind: KindPatch, Text: t}}
	}
	return nil
}

func one(kind, text string, body []byte) []Item {
	text = clip(text, MaxText)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	b := append([]byte(nil), body...)
	return []Item{{Kind: kind, Text: text, Body: b}}
}

// fieldsText writes a note's string fields as "kind: field: value; …".
func fieldsText(kind string, fields map[string]any) string {
	var parts []string
	seen := map[string]bool{}
	add := func(k string) {
		s, ok := fields[k].(string)
		if !ok || seen[k] || skipped[k] || strings.TrimSpace(s) == "" {
			return
		}
		seen[k] = true
		parts = append(parts, k+": "+oneLine(s))
	}
	for _, k := range noteOrder {
		add(k)
	}
	rest := make([]string, 0, len(fields))
	for k := range fields {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		add(k)
	}
	return kind + ": " + strings.Join(parts, "; ")
}

// Snippet cuts an indexed text to a pointer's snippet.
func Snippet(text string) string { return clip(oneLine(text), MaxSnippet) }

// oneLine folds runs of blanks and line ends into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// firstLines keeps the first n non-blank lines of s, folded to one.
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return oneLine(strings.Join(out, " "))
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut,
// and drops what is not valid UTF-8 or is a NUL.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

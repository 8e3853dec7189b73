package kb

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"choir/choird/headless"
)

func noteReceipt(t *testing.T, n headless.Note) headless.Receipt {
	t.Helper()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return headless.Receipt{RunID: "r-0123456789ab", Seq: 2, Kind: headless.KindNote, Body: b}
}

// What is embedded is the kind and the typed fields in a fixed order,
// never cites, budgets or the raw content of an object; requests and
// lifecycle receipts give nothing.
func TestItemsText(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	cases := []struct {
		name string
		rec  headless.Receipt
		kind string
		text string // "" for no item
	}{
		{"conjecture", noteReceipt(t, headless.Note{Type: headless.NoteConjecture, Claim: "warm caches halve p99", Test: "bench cold vs warm",
			Edge: "caches over 1 GiB", DeltaO: "drop the prefetch", Scope: "the API tier", Cites: []string{"r-0123456789ab#1"}}),
			KindConjecture, "conjecture: claim: warm caches halve p99; test: bench cold vs warm; edge: caches over 1 GiB; delta_o: drop the prefetch; scope: the API tier"},
		{"hyperthesis", noteReceipt(t, headless.Note{Type: headless.NoteHyperthesis, Text: "no verifier covers ARM", Bound: "quarantine ARM builds"}),
			KindHyperthesis, "hyperthesis: text: no verifier covers ARM; bound: quarantine ARM builds"},
		{"hypothesis without its budget", noteReceipt(t, headless.Note{Type: headless.NoteHypothesis, Text: "the flake is a race", Test: "go test -race -count 50",
			Budget: &headless.Budgets{ToolCalls: 5}}),
			KindHypothesis, "hypothesis: text: the flake is a race; test: go test -race -count 50"},
		{"observation is a claim, lines folded", noteReceipt(t, headless.Note{Type: headless.NoteObservation, Text: "line one\n\n  line\ttwo"}),
			KindClaim, "claim: text: line one line two"},
		{"request help", noteReceipt(t, headless.Note{Type: headless.NoteRequestHelp, Text: "stuck"}), "", ""},
		{"request verify", noteReceipt(t, headless.Note{Type: headless.NoteRequestVerify, Text: "check"}), "", ""},
		{"attestation", headless.Receipt{Kind: headless.KindVerifierResults, Body: json.RawMessage(
			`{"verifier":"unit","passed":false,"summary":"3 passed, 1 failed","signature":"sig-1","artifacts":["` + hash + `"]}`)},
			KindAttestation, "attestation: verifier unit failed; summary: 3 passed, 1 failed; signature: sig-1"},
		{"patch by summary and files", headless.Receipt{Kind: headless.KindPatchReceipt, Body: json.RawMessage(
			`{"hash":"` + hash + `","files":["a.go","b.go"],"answer":"Fixed the race.\nIt was the cache.\n\nMore.\nAnd more."}`)},
			KindPatch, "patch: summary: Fixed the race. It was the cache. More.; files: a.go, b.go"},
		{"a fetched source by its URL, never its body", headless.Receipt{Kind: headless.KindNetRequest, Body: json.RawMessage(
			`{"method":"GET","url":"https://example.org/a?b=1","allowed":true,"status":200,"bytes":5120,"source":"` + hash + `","policy":"p"}`)},
			KindSource, "source: GET https://example.org/a?b=1 (status 200, 5120 bytes)"},
		{"a denied fetch", headless.Receipt{Kind: headless.KindNetRequest, Body: json.RawMessage(
			`{"method":"GET","url":"https://evil.example/","allowed":false,"reason":"not allowed","policy":"p"}`)}, "", ""},
		{"patch with a bad hash", headless.Receipt{Kind: headless.KindPatchReceipt, Body: json.RawMessage(`{"hash":"../x","files":["a"]}`)}, "", ""},
		{"note not JSON", headless.Receipt{Kind: headless.KindNote, Body: json.RawMessage(`[1]`)}, "", ""},
		{"unknown note type", headless.Receipt{Kind: headless.KindNote, Body: json.RawMessage(`{"type":"ASSERT","text":"x"}`)}, "", ""},
		{"run started", headless.Receipt{Kind: headless.KindRunStarted, Body: json.RawMessage(`{"base":"x"}`)}, "", ""},
		{"a new field of a note is kept, sorted after the known ones", headless.Receipt{Kind: headless.KindNote,
			Body: json.RawMessage(`{"type":"OBSERVATION","text":"t","zeta":"z","alpha":"a","cites":["sha256:` + hash + `"]}`)},
			KindClaim, "claim: text: t; alpha: a; zeta: z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items := Items(c.rec)
			if c.text == "" {
				if len(items) != 0 {
					t.Fatalf("Items = %+v; want none", items)
				}
				return
			}
			if len(items) != 1 || items[0].Kind != c.kind || items[0].Text != c.text {
				t.Fatalf("Items = %+v; want one %s with text %q", items, c.kind, c.text)
			}
			if c.kind == KindPatch || c.kind == KindSource {
				if items[0].Object != hash || items[0].Body != nil {
					t.Errorf("%s item = %+v; want the object the receipt names, no body", c.kind, items[0])
				}
			} else if string(items[0].Body) != string(c.rec.Body) {
				t.Errorf("item body = %s; want the receipt's body (stored and cited as an object)", items[0].Body)
			}
		})
	}
}

// Long or broken texts are cut at a rune boundary, without NULs or
// invalid UTF-8; a snippet is one line of at most MaxSnippet bytes.
func TestItemsTextBounds(t *testing.T) {
	long := strings.Repeat("é", MaxText) // 2 bytes each
	items := Items(noteReceipt(t, headless.Note{Type: headless.NoteObservation, Text: long}))
	if len(items) != 1 || len(items[0].Text) > MaxText || !utf8.ValidString(items[0].Text) || !strings.HasSuffix(items[0].Text, "…") {
		t.Fatalf("Items(long) text of %d bytes, valid %t; want at most %d, valid, marked cut", len(items[0].Text), utf8.ValidString(items[0].Text), MaxText)
	}
	s := Snippet("a\x00b\xff\nc " + strings.Repeat("ü", 400))
	if len(s) > MaxSnippet || !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\n") || !strings.HasPrefix(s, "ab c ") {
		t.Fatalf("Snippet = %q (%d bytes); want one valid line of at most %d", s, len(s), MaxSnippet)
	}
}

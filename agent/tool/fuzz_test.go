package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"choir/internal/jsonlimit"
	"choir/testkit"
)

// maxFuzzInput caps one fuzz input: manifests and tool results are small,
// and the cap keeps every execution fast.
const maxFuzzInput = 64 << 10

// FuzzParseManifest feeds arbitrary bytes to ParseManifest, the loader's
// parse and check of one manifest, and asserts what it promises:
//
//   - a refusal is a *LoadError whose faults name the file, carry a JSON
//     pointer or none, and say something;
//   - an accepted manifest is valid UTF-8 nested at most
//     jsonlimit.DefaultMaxDepth levels, and obeys every documented rule
//     when read again independently: a canonical name outside the reserved
//     prefix, a timeout within 1 ms..MaxTimeout, known side effect, exposure
//     and lock modes, valid lock keys, distinct secret names, an object
//     input schema that compiles;
//   - it survives json.Marshal and ParseManifest unchanged, and its
//     canonical form (the manifest hash's input) is a fixed point that does
//     not depend on the file's layout.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(manifest("acme.git.commit", `"locks": [{"resource": "file:a/../b", "mode": "X"}], "timeout_ms": 600000`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		const file = "fuzz.json"
		m, err := ParseManifest(file, data)
		if err != nil {
			if m != nil {
				t.Fatalf("ParseManifest returned a manifest with error %v", err)
			}
			var le *LoadError
			if !errors.As(err, &le) || len(le.Faults) == 0 {
				t.Fatalf("error %v (%T) is not a *LoadError with faults", err, err)
			}
			for _, fl := range le.Faults {
				if fl.File != file || strings.TrimSpace(fl.Message) == "" || fl.Path != "" && fl.Path[0] != '/' {
					t.Fatalf("fault %+v: want file %s, a JSON pointer or none, and a message", fl, file)
				}
			}
			return
		}
		if !utf8.Valid(data) || testkit.JSONNesting(data) > jsonlimit.DefaultMaxDepth {
			t.Fatalf("ParseManifest accepted %q: invalid UTF-8 or nested %d deep", data, testkit.JSONNesting(data))
		}
		checkManifest(t, m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(accepted manifest) = %v", err)
		}
		m2, err := ParseManifest(file, out)
		if err != nil {
			t.Fatalf("ParseManifest(Marshal(ParseManifest(%q))) = %v; an accepted manifest must survive a round trip", data, err)
		}
		if out2, _ := json.Marshal(m2); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", out, out2)
		}
		canon, err := canonical(data)
		if err != nil {
			t.Fatalf("canonical(accepted manifest) = %v", err)
		}
		if again, err := canonical(canon); err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical is not a fixed point:\n%s\n%s (%v)", canon, again, err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, data, "", "\t"); err == nil {
			if c2, err := canonical(indented.Bytes()); err != nil || !bytes.Equal(c2, canon) {
				t.Fatalf("canonical depends on layout:\n%s\n%s (%v)", canon, c2, err)
			}
		}
	})
}

// checkManifest re-reads the documented rules on an accepted manifest.
func checkManifest(t *testing.T, m *Manifest) {
	t.Helper()
	if !ValidName(m.LLM.Name) || strings.HasPrefix(m.LLM.Name, ReservedPrefix) || len(m.LLM.Name) > MaxNameLen {
		t.Fatalf("ParseManifest accepted the name %q", m.LLM.Name)
	}
	if m.LLM.Description == "" {
		t.Fatal("ParseManifest accepted an empty description")
	}
	if _, fs := compileParams(m.LLM.InputSchema); len(fs) > 0 {
		t.Fatalf("ParseManifest accepted an input schema that does not compile: %v", fs)
	}
	rt := m.runtime("/x")
	if rt.Timeout <= 0 || rt.Timeout > MaxTimeout {
		t.Fatalf("ParseManifest accepted timeout_ms %v: timeout %v", m.Runtime.TimeoutMS, rt.Timeout)
	}
	switch rt.SideEffect {
	case "read", "write", "external":
	default:
		t.Fatalf("ParseManifest accepted side_effect %q", rt.SideEffect)
	}
	switch rt.Exposure {
	case ExposeEdge, ExposeCore, ExposeBoth, ExposeNone:
	default:
		t.Fatalf("ParseManifest accepted exposure %q", rt.Exposure)
	}
	if rt.Version == "" || utf8.RuneCountInString(m.Runtime.Version) > 64 {
		t.Fatalf("ParseManifest accepted version %q", m.Runtime.Version)
	}
	for _, l := range rt.Locks {
		if l.Mode != Shared && l.Mode != Exclusive || lockKeyProblem(l.Key) != "" {
			t.Fatalf("ParseManifest accepted the lock %+v", l)
		}
		if p, ok := strings.CutPrefix(l.Key, "file:"); ok && (strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../")) {
			t.Fatalf("the lock %+v leaves the workspace", l)
		}
	}
	seen := map[string]bool{}
	for _, s := range m.Runtime.SecretResources {
		if s == "" || utf8.RuneCountInString(s) > 128 || seen[s] {
			t.Fatalf("ParseManifest accepted the secret_resources %q", m.Runtime.SecretResources)
		}
		seen[s] = true
	}
}

// FuzzParseResult feeds arbitrary bytes to ParseResult, which reads what an
// external or host tool printed: a refusal says something; an accepted
// result is exactly one JSON object, has status success or error, an error
// result always carries a code, a success result none, Fields never hold
// the reserved members, and MarshalJSON and ParseResult round-trip it
// (marshalling is a fixed point after one pass).
func FuzzParseResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > maxFuzzInput {
			return
		}
		r, err := ParseResult(raw)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("ParseResult failed with an empty message")
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			t.Fatalf("ParseResult accepted %q, which is not one JSON object", raw)
		}
		switch r.Status {
		case StatusSuccess:
			if r.Error != nil {
				t.Fatalf("success result with error %+v", r.Error)
			}
		case StatusError:
			if r.Error == nil || r.Error.Code == "" {
				t.Fatalf("error result without an error code: %+v", r)
			}
		default:
			t.Fatalf("ParseResult accepted status %q", r.Status)
		}
		for k := range r.Fields {
			if reserved[k] {
				t.Fatalf("Fields holds the reserved member %q", k)
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal(accepted result) = %v", err)
		}
		r2, err := ParseResult(out)
		if err != nil {
			t.Fatalf("ParseResult(Marshal(ParseResult(%q))) = %v", raw, err)
		}
		if out2, _ := json.Marshal(r2); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the result:\n%s\n%s", out, out2)
		}
	})
}

// TestParseResultRefusesTrailingCloser is what FuzzParseResult found: a tool
// that prints an object and then a stray ']' or '}' has its output taken as
// a clean result, where any other trailing data is refused.
func TestParseResultRefusesTrailingCloser(t *testing.T) {
	for _, in := range []string{`{"summary":"ok"}]`, `{"summary":"ok"} }`, `{}}}`} {
		if r, err := ParseResult([]byte(in)); err == nil {
			t.Errorf("ParseResult(%q) = %+v; want an error about data after the object", in, r)
		}
	}
}

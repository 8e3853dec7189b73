package headless

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDocTiersRefusesMalformedFiles(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not json", `{"specs": [`, "write one JSON object"},
		{"unknown member", `{"spec": ["a.md"]}`, `unknown field "spec"`},
		{"not a list", `{"specs": "SPECS/"}`, "write one JSON object"},
		{"two values", `{} {}`, "more than one JSON value"},
		{"dot dot", `{"specs": ["../outside.md"]}`, "leaves the repository"},
		{"dot dot inside", `{"notes": ["a/../../b"]}`, "leaves the repository"},
		{"absolute", `{"doctrine": ["/etc/passwd"]}`, "absolute"},
		{"unclean", `{"specs": ["a//b.md"]}`, "not clean"},
		{"dot", `{"specs": ["./a.md"]}`, "not clean"},
		{"empty entry", `{"specs": [""]}`, "is empty"},
		{"backslash", `{"specs": ["a\\b.md"]}`, "backslash"},
		{"control character", `{"specs": ["a\u0001.md"]}`, "control character"},
		{"two tiers", `{"specs": ["a.md"], "notes": ["a.md"]}`, "declared already in specs[0]"},
		{"too large", `{"notes": ["` + strings.Repeat("a", maxTiersFile) + `"]}`, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDocTiers(".choir/docs.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), ".choir/docs.json") {
				t.Fatalf("ParseDocTiers(%q) = %v; want an error naming the file and saying %q", tc.data, err, tc.want)
			}
		})
	}
}

func TestTierOf(t *testing.T) {
	tiers, err := ParseDocTiers("docs.json", []byte(`{"doctrine": ["DOCTRINE.md", "docs/"], "specs": ["docs/specs/", "API.md"], "notes": ["docs/specs/drafts/"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]Tier{
		"DOCTRINE.md":              TierDoctrine,
		"docs/intro.md":            TierDoctrine,
		"docs/specs/api.md":        TierSpecs, // the longest entry decides
		"docs/specs/drafts/x.md":   TierNotes,
		"API.md":                   TierSpecs,
		"API.md.orig":              "", // a file entry is not a prefix
		"docsx/a.md":               "",
		"main.go":                  "",
		".choir/docs.json":         TierDoctrine, // whatever the file says
		"DOCTRINE.md/../API.md":    "",           // patches name clean paths; an unclean one matches nothing by prefix
		"docs/specs":               TierDoctrine, // the file "docs/specs" is under docs/, not the directory docs/specs/
		"docs/specs/drafts":        TierSpecs,
		"docs/specs/drafts/a/b.md": TierNotes,
	} {
		if got := tiers.TierOf(path); got != want {
			t.Errorf("TierOf(%q) = %q; want %q", path, got, want)
		}
	}
	got := tiers.GatedChanges([]string{"main.go", "API.md", "docs/specs/drafts/x.md", "docs/a.md"})
	want := []DocChange{{"API.md", TierSpecs}, {"docs/a.md", TierDoctrine}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("GatedChanges = %v; want %v", got, want)
	}
	if empty, err := ParseDocTiers("docs.json", []byte("  \n")); err != nil || empty.TierOf("SPECS/a.md") != "" || empty.TierOf(TiersFile) != TierDoctrine {
		t.Errorf("an empty tier file = %+v, %v; want nothing declared but itself", empty, err)
	}
}

func TestReadDocTiers(t *testing.T) {
	dir := t.TempDir()
	if tiers, err := ReadDocTiers(dir); err != nil || len(tiers.Specs) != 0 {
		t.Fatalf("ReadDocTiers without a file = %+v, %v; want nothing declared", tiers, err)
	}
	os.MkdirAll(filepath.Join(dir, ".choir"), 0o755)
	secret := filepath.Join(t.TempDir(), "secret.json")
	os.WriteFile(secret, []byte(`{"specs": ["a.md"]}`), 0o600)
	if err := os.Symlink(secret, filepath.Join(dir, ".choir", "docs.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDocTiers(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadDocTiers of a symlink = %v; want refused", err)
	}
	os.Remove(filepath.Join(dir, ".choir", "docs.json"))
	os.WriteFile(filepath.Join(dir, ".choir", "docs.json"), []byte(`{"specs": ["SPECS/"]}`), 0o644)
	if tiers, err := ReadDocTiers(dir); err != nil || tiers.TierOf("SPECS/a.md") != TierSpecs {
		t.Errorf("ReadDocTiers = %+v, %v; want SPECS/ declared", tiers, err)
	}
}

// gatedRun is a running run of a low-risk item whose patch touches docs.
func gatedRun(t *testing.T, d *Director, agent string, docs []DocChange, tiersErr string) Run {
	t.Helper()
	ctx := t.Context()
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{Agent: agent, Verifiers: []string{"go-test"}}).ID)
	d.MarkRunning(ctx, r.ID, base, "/wt/"+r.ID, "")
	body, _ := json.Marshal(map[string]any{"hash": patchID, "docs": docs, "tiers_error": tiersErr})
	if _, _, err := d.Record(ctx, r.ID, KindPatchReceipt, body, nil, ""); err != nil {
		t.Fatal(err)
	}
	return r
}

func passAndRequest(t *testing.T, d *Director, r Run) CommitCheck {
	t.Helper()
	ctx := t.Context()
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Patch: patchID}, "")
	if _, _, err := d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, ""); err != nil {
		t.Fatal(err)
	}
	c, err := d.CommitCheck(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSpecsNeedAMergedSpecChange(t *testing.T) {
	d, ctx := newDirector(t)
	// A passing attestation of an earlier run of alpha, a failing one, and
	// one of beta's runs.
	prev := gatedRun(t, d, "alpha", nil, "")
	passRef, _, _ := d.Attest(ctx, prev.ID, Attestation{Verifier: "go-test", Passed: true}, "")
	failRef, _, _ := d.Attest(ctx, prev.ID, Attestation{Verifier: "go-test", Passed: false, Summary: "FAIL"}, "")
	betaRun := gatedRun(t, d, "beta", nil, "")
	betaRef, _, _ := d.Attest(ctx, betaRun.ID, Attestation{Verifier: "go-test", Passed: true}, "")

	r := gatedRun(t, d, "alpha", []DocChange{{"SPECS/api.md", TierSpecs}}, "")
	exists := func(h string) error {
		if h == patchID {
			return nil
		}
		return errors.New("not found")
	}
	ok := SpecChange{Paths: []string{"SPECS/api.md"}, Change: "the API returns 404 for a missing item", Evidence: []string{passRef.Ref()}}
	for _, tc := range []struct {
		name, want string
		edit       func(*SpecChange)
	}{
		{"no evidence", "no evidence", func(s *SpecChange) { s.Evidence = nil }},
		{"failing attestation", "failing attestation", func(s *SpecChange) { s.Evidence = []string{failRef.Ref()} }},
		{"another agent's run", "run of agent beta", func(s *SpecChange) { s.Evidence = []string{betaRef.Ref()} }},
		{"not an attestation", "not an attestation", func(s *SpecChange) { s.Evidence = []string{prev.ID + "#1"} }},
		{"no such receipt", "no receipt 99", func(s *SpecChange) { s.Evidence = []string{prev.ID + "#99"} }},
		{"no such run", "r-0000000000ff", func(s *SpecChange) { s.Evidence = []string{"r-0000000000ff#1"} }},
		{"missing object", "not found", func(s *SpecChange) { s.Evidence = []string{"sha256:" + strings.Repeat("b", 64)} }},
		{"bad object", "not a SHA-256", func(s *SpecChange) { s.Evidence = []string{"sha256:../../x"} }},
		{"neither", "neither", func(s *SpecChange) { s.Evidence = []string{"trust me"} }},
		{"dot dot path", "leaves the repository", func(s *SpecChange) { s.Paths = []string{"../SPECS/api.md"} }},
		{"absolute path", "absolute", func(s *SpecChange) { s.Paths = []string{"/SPECS/api.md"} }},
		{"directory", "directory", func(s *SpecChange) { s.Paths = []string{"SPECS/"} }},
		{"the tier file", "DOCTRINE", func(s *SpecChange) { s.Paths = []string{TiersFile} }},
		{"no change", "change: is empty", func(s *SpecChange) { s.Change = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			s.Evidence, s.Paths = append([]string(nil), ok.Evidence...), append([]string(nil), ok.Paths...)
			tc.edit(&s)
			if _, _, err := d.RequestSpecChange(ctx, r.ID, s, exists, ""); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RequestSpecChange = %v; want invalid input saying %q", err, tc.want)
			}
		})
	}
	// Without a merged request the commit is refused, naming the path,
	// the tier and the gate.
	c := passAndRequest(t, d, r)
	if c.Ready || len(c.Missing) != 1 || !strings.Contains(c.Missing[0], "SPECS/api.md, which is SPECS") || !strings.Contains(c.Missing[0], "SPEC_CHANGE_REQUEST") {
		t.Errorf("CommitCheck without a spec change = %+v; want refused naming SPECS/api.md, SPECS and the gate", c)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, "human:alice", "", ""); !errors.Is(err, ErrConflict) {
		t.Errorf("a human's approval without a spec change = %v; want refused too", err)
	}

	// With one merged (an object citation and a passing attestation), the
	// commit may go on; it names what merged it.
	r2 := gatedRun(t, d, "alpha", []DocChange{{"SPECS/api.md", TierSpecs}}, "")
	s := ok
	s.Evidence = []string{passRef.Ref(), "sha256:" + patchID}
	s.Merged = true // what the caller says is ignored: the director merges
	rec, _, err := d.RequestSpecChange(ctx, r2.ID, s, exists, "")
	if err != nil {
		t.Fatal(err)
	}
	var body SpecChange
	json.Unmarshal(rec.Body, &body)
	if !body.Merged || body.By != "director" {
		t.Errorf("SpecChangeRequest body = %+v; want merged by the director", body)
	}
	c = passAndRequest(t, d, r2)
	if !c.Ready || len(c.Gates) != 1 || !strings.Contains(c.Gates[0], rec.Ref()) {
		t.Errorf("CommitCheck with a merged spec change = %+v; want ready, the gate naming %s", c, rec.Ref())
	}
	// A merged request covers exactly its paths.
	r3 := gatedRun(t, d, "alpha", []DocChange{{"SPECS/api.md", TierSpecs}, {"SPECS/other.md", TierSpecs}}, "")
	d.RequestSpecChange(ctx, r3.ID, ok, exists, "")
	if c := passAndRequest(t, d, r3); c.Ready || len(c.Missing) != 1 || !strings.Contains(c.Missing[0], "SPECS/other.md") {
		t.Errorf("CommitCheck with one of two SPECS paths merged = %+v; want SPECS/other.md missing", c)
	}
}

func TestDoctrineNeedsAHumanAndABadTierFileRefuses(t *testing.T) {
	d, ctx := newDirector(t)
	r := gatedRun(t, d, "alpha", []DocChange{{"DOCTRINE.md", TierDoctrine}, {TiersFile, TierDoctrine}}, "")
	c := passAndRequest(t, d, r)
	if !c.Ready || !c.NeedsHuman || len(c.Gates) != 2 || !strings.Contains(c.Gates[0], "DOCTRINE path DOCTRINE.md") {
		t.Fatalf("CommitCheck of a DOCTRINE change = %+v; want ready for a human only", c)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "DOCTRINE") {
		t.Errorf("policy approval of a DOCTRINE change = %v; want refused", err)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, "human:alice", "ok", ""); err != nil {
		t.Errorf("a human's approval of a DOCTRINE change = %v", err)
	}
	bad := gatedRun(t, d, "alpha", nil, ".choir/docs.json: specs[0]: \"../x\" leaves the repository")
	if c := passAndRequest(t, d, bad); c.Ready || !strings.Contains(strings.Join(c.Missing, ";"), "doc tiers cannot be read") {
		t.Errorf("CommitCheck with a malformed tier file = %+v; want refused", c)
	}
	// NOTES and code are free.
	free := gatedRun(t, d, "alpha", nil, "")
	if c := passAndRequest(t, d, free); !c.Ready || c.NeedsHuman {
		t.Errorf("CommitCheck of a patch touching no gated doc = %+v; want ready by policy", c)
	}
}

// Whatever a tier file holds, what ParseDocTiers accepts names only clean
// paths inside the repository, and TierOf never panics.
func FuzzParseDocTiers(f *testing.F) {
	for _, seed := range []string{`{"specs": ["SPECS/"], "doctrine": ["D.md"]}`, `{"notes": ["../x"]}`, `{"specs": ["a//b"]}`, `[]`, `{"specs": [""]}`, ""} {
		f.Add(seed, "SPECS/a.md")
	}
	f.Fuzz(func(t *testing.T, data, path string) {
		tiers, err := ParseDocTiers("docs.json", []byte(data))
		if err != nil {
			return
		}
		for _, list := range [][]string{tiers.Doctrine, tiers.Specs, tiers.Notes} {
			for _, p := range list {
				if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") || strings.Contains(p, "\\") || strings.Contains(p, "//") {
					t.Fatalf("accepted %q from %q", p, data)
				}
			}
		}
		tiers.TierOf(path)
	})
}

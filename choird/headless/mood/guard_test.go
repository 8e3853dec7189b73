package mood

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func an(kind AnomalyKind, runs ...string) Anomaly {
	return Anomaly{Kind: kind, Run: runs[len(runs)-1], Runs: runs, Count: len(runs), Detail: string(kind)}
}

// The guard table, one row per guard and the precedence between them.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name     string
		f        Facts
		to       Mood // "" means no transition
		guard    Guard
		evidence string // a part of one evidence line
	}{
		// One row per guard.
		{"crash", Facts{Current: Calm, CrashRecovery: true}, Contrite, GuardCrashRecovery, "crash recovery"},
		{"unexpected network", Facts{Current: Calm, Anomalies: []Anomaly{an(UnexpectedNetwork, "r-000000000001")}}, Paranoid, GuardUnexpectedNetwork, "run r-000000000001"},
		{"commit of high risk", Facts{Current: Calm, Privilege: Commit, Risk: "high"}, Deferential, GuardPrivilegeHighRisk, "risk high"},
		{"commit", Facts{Current: Calm, Privilege: Commit, Risk: "low"}, Skeptical, GuardPrivilege, "about to commit"},
		{"export", Facts{Current: Curious, Privilege: Export}, Skeptical, GuardPrivilege, "about to export"},
		{"commit touching DOCTRINE", Facts{Current: Calm, Privilege: Commit, Touches: []string{"DOCTRINE: RULES.md"}}, Skeptical, GuardPrivilege, "touches DOCTRINE: RULES.md"},
		{"regression", Facts{Current: Calm, Regressed: []string{"go-test"}}, Skeptical, GuardRegression, "verifier go-test regressed"},
		{"repeated failure", Facts{Current: Calm, Anomalies: []Anomaly{{Kind: RepeatedFailure, Runs: []string{"r-1", "r-2", "r-3"}, Signature: "sig-ab"}}}, Curious, GuardRepeatedFailure, "signature sig-ab"},
		{"budget", Facts{Current: Calm, Anomalies: []Anomaly{an(BudgetExhausted, "r-9")}}, Deferential, GuardBudget, "run r-9"},
		{"no state change", Facts{Current: Calm, Anomalies: []Anomaly{an(NoStateChange, "r-1", "r-2", "r-3")}}, Curious, GuardNoStateChange, "run r-3"},
		{"no state change while curious", Facts{Current: Curious, Anomalies: []Anomaly{an(NoStateChange, "r-1", "r-2", "r-3")}}, Deferential, GuardNoStateChange, "run r-1"},
		{"hyperthesis", Facts{Current: Calm, Hyperthesis: 3}, Paranoid, GuardHyperthesis, "3 unbounded hypertheses, threshold 3"},
		{"many hypertheses, bounded", Facts{Current: Calm, HyperthesisEntries: 6, Hyperthesis: 2}, Skeptical, GuardHyperthesisMany, "6 hyperthesis entries, threshold 6"},
		{"unbounded beats many", Facts{Current: Calm, HyperthesisEntries: 9, Hyperthesis: 3}, Paranoid, GuardHyperthesis, ""},
		{"near CI", Facts{Current: Calm, Sensitive: []string{"ci config: .github/workflows/ci.yml"}}, Paranoid, GuardSensitive, "near ci config: .github/workflows/ci.yml"},
		{"near credentials, high risk commit", Facts{Current: Calm, Sensitive: []string{"credentials: .env"}, Privilege: Commit, Risk: "high"}, Paranoid, GuardSensitive, "near credentials: .env"},
		{"network beats sensitive", Facts{Current: Calm, Sensitive: []string{"credentials: .env"}, Anomalies: []Anomaly{an(UnexpectedNetwork, "r-1")}}, Paranoid, GuardUnexpectedNetwork, ""},
		{"cleared from skeptical", Facts{Current: Skeptical, Passed: true}, Calm, GuardCleared, "last SKEPTICAL run passed"},
		{"cleared from contrite", Facts{Current: Contrite, Passed: true}, Calm, GuardCleared, "CONTRITE"},
		{"cleared from deferential", Facts{Current: Deferential, Passed: true}, Calm, GuardCleared, "DEFERENTIAL"},

		// Nothing fires: the mood holds.
		{"calm and quiet", Facts{Current: Calm, Passed: true}, "", "", ""},
		{"skeptical, not passed", Facts{Current: Skeptical}, "", "", ""},
		{"hyperthesis under threshold", Facts{Current: Calm, Hyperthesis: 2}, "", "", ""},
		{"few hypertheses", Facts{Current: Calm, Hyperthesis: 2, HyperthesisEntries: 5}, "", "", ""},
		{"sensitive, already hardened", Facts{Current: Calm, Sensitive: []string{"credentials: .env"}, Hardened: true}, "", "", ""},
		{"paranoid holds while sensitive", Facts{Current: Paranoid, Sensitive: []string{"credentials: .env"}, Passed: true}, "", "", ""},
		{"empty current is CALM", Facts{}, "", "", ""},

		// The most severe guard decides, and holds its mood.
		{"crash beats everything", Facts{Current: Calm, CrashRecovery: true, Privilege: Commit, Regressed: []string{"x"}, Anomalies: []Anomaly{an(UnexpectedNetwork, "r-1")}}, Contrite, GuardCrashRecovery, ""},
		{"still crashed: CONTRITE holds though it passed", Facts{Current: Contrite, CrashRecovery: true, Passed: true}, "", "", ""},
		{"network beats commit", Facts{Current: Calm, Privilege: Commit, Anomalies: []Anomaly{an(UnexpectedNetwork, "r-1")}}, Paranoid, GuardUnexpectedNetwork, ""},
		{"paranoid holds on network though it passed", Facts{Current: Paranoid, Passed: true, Anomalies: []Anomaly{an(UnexpectedNetwork, "r-1")}}, "", "", ""},
		{"high-risk commit beats regression", Facts{Current: Calm, Privilege: Publish, Risk: "high", Regressed: []string{"x"}}, Deferential, GuardPrivilegeHighRisk, ""},
		{"skeptical holds near a commit", Facts{Current: Skeptical, Privilege: Commit, Passed: true}, "", "", ""},
		{"regression beats repeated failure", Facts{Current: Calm, Regressed: []string{"x"}, Anomalies: []Anomaly{an(RepeatedFailure, "r-1", "r-2", "r-3")}}, Skeptical, GuardRegression, ""},
		{"repeated failure beats budget", Facts{Current: Calm, Anomalies: []Anomaly{an(BudgetExhausted, "r-3"), an(RepeatedFailure, "r-1", "r-2", "r-3")}}, Curious, GuardRepeatedFailure, ""},
		{"budget beats no state change", Facts{Current: Calm, Anomalies: []Anomaly{an(NoStateChange, "r-3"), an(BudgetExhausted, "r-3")}}, Deferential, GuardBudget, ""},
		{"anomaly beats cleared", Facts{Current: Skeptical, Passed: true, Anomalies: []Anomaly{an(NoStateChange, "r-3")}}, Curious, GuardNoStateChange, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, ok := Decide(c.f, Thresholds{})
			if c.to == "" {
				if ok {
					t.Fatalf("Decide(%+v) = %+v; want no transition", c.f, tr)
				}
				return
			}
			if !ok || tr.To != c.to || tr.Guard != c.guard {
				t.Fatalf("Decide(%+v) = %+v, %t; want to %s by %s", c.f, tr, ok, c.to, c.guard)
			}
			from := c.f.Current
			if from == "" {
				from = Calm
			}
			if tr.From != from || tr.Reason == "" || len(tr.Evidence) == 0 {
				t.Errorf("Decide = %+v; want from %s with a reason and evidence", tr, from)
			}
			if c.evidence != "" && !slices.ContainsFunc(tr.Evidence, func(e string) bool { return strings.Contains(e, c.evidence) }) {
				t.Errorf("Decide evidence = %q; want a line with %q", tr.Evidence, c.evidence)
			}
			// Deterministic: the same facts give the same transition.
			if again, _ := Decide(c.f, Thresholds{}); !reflect.DeepEqual(again, tr) {
				t.Errorf("Decide twice = %+v then %+v", tr, again)
			}
		})
	}
}

func TestDecideThresholds(t *testing.T) {
	f := Facts{Current: Calm, Hyperthesis: 4}
	if _, ok := Decide(f, Thresholds{Hyperthesis: 5}); ok {
		t.Error("Decide with hyperthesis 4 under threshold 5 moved")
	}
	if tr, ok := Decide(f, Thresholds{Hyperthesis: 4}); !ok || tr.To != Paranoid {
		t.Errorf("Decide with hyperthesis 4 at threshold 4 = %+v, %t; want PARANOID", tr, ok)
	}
}

// Every guard of the table is reached by some facts: none is shadowed.
func TestEveryGuardIsReachable(t *testing.T) {
	reach := map[Guard]Facts{
		GuardCrashRecovery:     {CrashRecovery: true},
		GuardUnexpectedNetwork: {Anomalies: []Anomaly{an(UnexpectedNetwork, "r")}},
		GuardPrivilegeHighRisk: {Privilege: Commit, Risk: "high"},
		GuardPrivilege:         {Privilege: Commit},
		GuardRegression:        {Regressed: []string{"v"}},
		GuardRepeatedFailure:   {Anomalies: []Anomaly{an(RepeatedFailure, "r")}},
		GuardBudget:            {Anomalies: []Anomaly{an(BudgetExhausted, "r")}},
		GuardNoStateChange:     {Anomalies: []Anomaly{an(NoStateChange, "r")}},
		GuardHyperthesis:       {Hyperthesis: 99},
		GuardSensitive:         {Sensitive: []string{"ci config: .github/workflows/ci.yml"}},
		GuardHyperthesisMany:   {HyperthesisEntries: 6},
		GuardCleared:           {Current: Paranoid, Passed: true},
	}
	for _, g := range Guards() {
		f, ok := reach[g]
		if !ok {
			t.Errorf("guard %s has no case here; add one", g)
			continue
		}
		if tr, ok := Decide(f, DefaultThresholds); !ok || tr.Guard != g {
			t.Errorf("Decide(%+v) = %+v, %t; want guard %s", f, tr, ok, g)
		}
	}
}

func TestTransitionReceiptBody(t *testing.T) {
	tr, _ := Decide(Facts{Current: Calm, Regressed: []string{"go-test"}}, Thresholds{})
	body, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	for _, k := range []string{"from", "to", "guard", "evidence", "reason"} {
		if _, ok := m[k]; !ok {
			t.Errorf("MoodTransition body %s lacks %q", body, k)
		}
	}
	if m["from"] != "CALM" || m["to"] != "SKEPTICAL" || m["guard"] != "verifier_regressed" {
		t.Errorf("MoodTransition body = %s", body)
	}
}

// What a run comes near, by path and by the work item's words.
func TestSensitive(t *testing.T) {
	for _, c := range []struct {
		files []string
		text  string
		want  []string
	}{
		{[]string{"main.go", "README.md", "docs/deploying.md", "internal/keys/keys.go", "Makefile"}, "fix the parser's nil map", nil},
		{[]string{".env", "config/.env.production", "certs/server.pem", "home/.ssh/config", "id_ed25519"}, "", []string{
			"credentials: .env", "credentials: certs/server.pem", "credentials: config/.env.production", "credentials: home/.ssh/config", "credentials: id_ed25519"}},
		{[]string{".github/workflows/ci.yml", ".gitlab-ci.yml", "sub/.circleci/config.yml", "Jenkinsfile"}, "", []string{
			"ci config: .github/workflows/ci.yml", "ci config: .gitlab-ci.yml", "ci config: Jenkinsfile", "ci config: sub/.circleci/config.yml"}},
		{[]string{"deploy/prod.sh", "scripts/deploy.sh", "infra/main.tf", "fly.toml"}, "", []string{
			"deploy scripts: deploy/prod.sh", "deploy scripts: fly.toml", "deploy scripts: infra/main.tf", "deploy scripts: scripts/deploy.sh"}},
		{[]string{".choir/docs.json", "./.choir/config.json"}, "", []string{"choir config: ./.choir/config.json", "choir config: .choir/docs.json"}},
		{nil, "Rotate the API credentials used by `scripts/deploy.sh`.", []string{"credentials: credentials", "deploy scripts: scripts/deploy.sh"}},
		{nil, "Deploy the docs; see https://example.org/.env for why", []string{"deploy scripts: deploy"}},
		{[]string{".env", ".env"}, "secret", []string{"credentials: .env", "credentials: secret"}},
	} {
		if got := Sensitive(c.files, c.text); !slices.Equal(got, c.want) {
			t.Errorf("Sensitive(%q, %q) = %q; want %q", c.files, c.text, got, c.want)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
)

// A run's own notes and requests end to end (issue 25, items 2 and 5),
// with a real agent in a run container (no network, its model calls
// carried by choird) and a scripted fake model:
//
//   - a run whose model calls choir.run.split ends without a commit, and
//     its low-risk work item is split into the proposed children
//     (`choirctl work list` shows them); a medium-risk one waits for a
//     human, who accepts the proposal with `choirctl work split --request`;
//   - the repository declares SPECS.md as SPECS (.choir/docs.json): a run
//     that changes it without evidence passes its verifier but is refused
//     its commit; the next run files choir.run.spec_change citing that
//     passing attestation first, and is committed.

// scriptModel answers a headless run's objective and each tool result
// with the next step of the script its objective selects (a tool call),
// and with a final answer once the script is done. Everything else (the
// session summary, compaction) goes to the demo model.
type scriptModel struct {
	demo demomodel.Server
	// script returns the tool calls (canonical name, arguments) for a
	// run's objective; it is called once per run.
	script func(run, objective string) [][2]string

	mu    sync.Mutex
	steps map[string][][2]string
}

func (m *scriptModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 && !offers(req.Tools, "memory_delta") && !offers(req.Tools, "core_finish") {
		run, objective, tools := "", "", 0
		for _, msg := range req.Messages {
			var text string
			json.Unmarshal(msg.Content, &text)
			if i := strings.Index(text, "[choir headless run "); msg.Role == "user" && i >= 0 && run == "" {
				run, _, _ = strings.Cut(text[i+len("[choir headless run "):], ",")
				objective = text
			}
			if msg.Role == "tool" && run != "" {
				tools++
			}
		}
		last := req.Messages[len(req.Messages)-1]
		if run != "" && (last.Role == "user" || last.Role == "tool") {
			m.mu.Lock()
			if m.steps == nil {
				m.steps = map[string][][2]string{}
			}
			steps, ok := m.steps[run]
			if !ok {
				steps = m.script(run, objective)
				m.steps[run] = steps
			}
			m.mu.Unlock()
			if tools < len(steps) {
				writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": fmt.Sprintf("call_%d", time.Now().UnixNano()), "type": "function",
					"function": map[string]any{"name": openai.WireName(steps[tools][0]), "arguments": steps[tools][1]}}}}, "tool_calls")
				return
			}
			var text string
			json.Unmarshal(last.Content, &text)
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": "done: " + oneLine(text, 300)}, "stop")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}

func jsonArgs(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRunNotesSplitAndSpecChange(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)

	ws := testkit.Workspace(t)
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn("init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(ws, ".choir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		".choir/docs.json": `{"doctrine": ["DOCTRINE.md"], "specs": ["SPECS.md"], "notes": ["notes/"]}` + "\n",
		"SPECS.md":         "The answer is unspecified.\n",
		"DOCTRINE.md":      "Be kind.\n",
		"check.sh":         "#!/bin/sh\ngrep -q 42 SPECS.md && echo 'ok  specs' || { echo 'FAIL: SPECS.md does not say 42'; exit 1; }\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "docs with tiers")
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
	}); err != nil {
		t.Fatal(err)
	}

	// The script: SPLIT-ME items ask to split; the SPEC-ME item's first run
	// writes SPECS.md alone, its later runs merge a spec change citing
	// the evidence the test found, then write.
	var mu sync.Mutex
	evidence := ""
	split := jsonArgs(map[string]any{"reason": "two separate parts, each a run's worth", "children": []any{
		map[string]any{"description": "write the parser", "acceptance": []string{"the parser reads the sample"}},
		map[string]any{"description": "write the printer", "acceptance": []string{"the printer prints the sample"}, "after": []int{0}},
	}})
	write := jsonArgs(map[string]any{"path": "SPECS.md", "op": "overwrite", "content": "The answer is 42.\n"})
	model := &scriptModel{script: func(run, objective string) [][2]string {
		switch {
		case strings.Contains(objective, "SPLIT-ME"):
			return [][2]string{{"choir.run.note", jsonArgs(map[string]any{"type": "OBSERVATION", "text": "the item has two separate parts"})},
				{"choir.run.split", split}}
		case strings.Contains(objective, "SPEC-ME"):
			mu.Lock()
			ev := evidence
			mu.Unlock()
			if ev == "" {
				return [][2]string{{"choir.fs.write", write}}
			}
			return [][2]string{{"choir.run.spec_change", jsonArgs(map[string]any{"paths": []string{"SPECS.md"},
				"change": "the answer is 42", "evidence": []string{ev}})}, {"choir.fs.write", write}}
		}
		return nil
	}}
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: model}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["agents"] = map[string]any{"nt-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"verifiers": map[string]any{"check": map[string]any{"command": []string{"sh", "check.sh"}, "timeout_s": 300}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-9Nt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "nt-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string { return "choird:\n" + tail(d.stderr.String(), 6000) }

	addItem := func(desc, risk string) ctl.WorkItem {
		t.Helper()
		var it ctl.WorkItem
		out, stderr, code := ctlRun(t, home, "", "work", "add", "nt-1", desc, "--accept", "check.sh passes", "--verifier", "check", "--risk", risk, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &it) != nil || it.ID == "" {
			t.Fatalf("work add = %d %q %q", code, out, stderr)
		}
		return it
	}
	startRun := func(item string) string {
		t.Helper()
		var r ctl.Run
		out, stderr, code := ctlRun(t, home, "", "run", "start", item, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("run start = %d %q %q\n%s", code, out, stderr, report())
		}
		return r.ID
	}
	receipts := func(id string) []ctl.Receipt {
		t.Helper()
		var rs []ctl.Receipt
		out, stderr, code := ctlRun(t, home, "", "run", "receipts", id, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &rs) != nil {
			t.Fatalf("run receipts %s = %d %q %q", id, code, out, stderr)
		}
		return rs
	}
	kinds := func(rs []ctl.Receipt) string {
		var k []string
		for _, r := range rs {
			k = append(k, r.Kind)
		}
		return strings.Join(k, " ")
	}
	waitEnd := func(id, want string) {
		t.Helper()
		waitUntil(t, "run "+id+" "+want, 5*time.Minute, func() bool {
			var rd ctl.RunDetail
			out, _, code := ctlRun(t, home, "", "run", "show", id, "--json")
			if code != 0 || json.Unmarshal([]byte(out), &rd) != nil {
				return false
			}
			if ended := map[string]bool{"committed": true, "failed": true, "discarded": true, "cancelled": true}; ended[rd.Run.Status] && rd.Run.Status != want {
				t.Fatalf("run %s ended %s, not %s; its receipts: %s\n%s", id, rd.Run.Status, want, kinds(receipts(id)), report())
			}
			return rd.Run.Status == want
		}, report)
	}
	items := func() map[string]ctl.WorkItem {
		t.Helper()
		var list []ctl.WorkItem
		out, stderr, code := ctlRun(t, home, "", "work", "list", "--agent", "nt-1", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("work list = %d %q %q", code, out, stderr)
		}
		m := map[string]ctl.WorkItem{}
		for _, it := range list {
			m[it.ID] = it
		}
		return m
	}
	children := func(parent string) []ctl.WorkItem {
		var out []ctl.WorkItem
		for _, it := range items() {
			if it.Parent == parent {
				out = append(out, it)
			}
		}
		return out
	}
	commits := func() int { return len(strings.Split(gitIn("log", "--format=%H", "main"), "\n")) }

	// A low-risk item: the run's split request splits it at once.
	low := addItem("SPLIT-ME: build the parser and the printer", "low")
	r1 := startRun(low.ID)
	waitEnd(r1, "discarded")
	if k := kinds(receipts(r1)); !strings.Contains(k, "Note") || !strings.Contains(k, "SplitRequest SplitDecision RunEnded") || strings.Contains(k, "PatchReceipt") {
		t.Errorf("run %s's receipts = %s; want the note, the request, the decision and the end, no patch", r1, k)
	}
	kids := children(low.ID)
	if got := items()[low.ID].Status; got != "split" || len(kids) != 2 {
		t.Fatalf("work list: %s is %s with children %+v; want split into 2", low.ID, got, kids)
	}
	for _, k := range kids {
		if !strings.Contains(strings.Join(k.Acceptance, ";"), "check.sh passes") || strings.Join(k.Verifiers, ",") != "check" || k.Risk != "low" {
			t.Errorf("child %+v; want the parent's criterion, verifier and risk inherited", k)
		}
	}
	if out, _, _ := ctlRun(t, home, "", "work", "list", "--agent", "nt-1"); !strings.Contains(out, "write the parser") || !strings.Contains(out, "write the printer") {
		t.Errorf("work list = %q; want both children", out)
	}
	if commits() != 1 {
		t.Errorf("a split run committed something")
	}

	// A medium-risk item waits for a human, who accepts the proposal.
	medium := addItem("SPLIT-ME: medium risk", "medium")
	r2 := startRun(medium.ID)
	waitEnd(r2, "discarded")
	if kids := children(medium.ID); len(kids) != 0 {
		t.Fatalf("a medium-risk item was split without a human: %+v", kids)
	}
	ref := ""
	for _, rec := range receipts(r2) {
		if rec.Kind == "SplitRequest" {
			ref = fmt.Sprintf("%s#%d", r2, rec.Seq)
		}
	}
	if out, stderr, code := ctlRun(t, home, "", "work", "split", medium.ID, "--request", r1+"#1"); code == 0 || !strings.Contains(stderr, "RunStarted") {
		t.Errorf("work split --request citing another run's RunStarted = %d %q %q; want refused", code, out, stderr)
	}
	if out, stderr, code := ctlRun(t, home, "", "work", "split", medium.ID, "--request", ref); code != 0 || !strings.Contains(out, "split into 2") {
		t.Fatalf("work split --request %s = %d %q %q", ref, code, out, stderr)
	}
	if kids := children(medium.ID); len(kids) != 2 || kids[0].Risk != "medium" {
		t.Errorf("children of the medium item = %+v; want 2, medium risk", kids)
	}

	// SPECS.md without evidence: verified, but refused its commit.
	spec := addItem("SPEC-ME: say in SPECS.md that the answer is 42", "low")
	r3 := startRun(spec.ID)
	waitEnd(r3, "failed")
	rs := receipts(r3)
	var pass string
	var decision struct {
		Approved *bool
		Reason   string
	}
	for _, rec := range rs {
		switch rec.Kind {
		case "VerifierResults":
			var a struct{ Passed bool }
			if json.Unmarshal(rec.Body, &a) == nil && a.Passed {
				pass = fmt.Sprintf("%s#%d", r3, rec.Seq)
			}
		case "CommitDecision":
			json.Unmarshal(rec.Body, &decision)
		}
	}
	if pass == "" || decision.Approved == nil || *decision.Approved || !strings.Contains(decision.Reason, "SPECS.md, which is SPECS") || !strings.Contains(decision.Reason, "SPEC_CHANGE_REQUEST") {
		t.Fatalf("run %s: passing attestation %q, decision %+v; want a passing verifier and a refusal naming SPECS.md, SPECS and the gate", r3, pass, decision)
	}
	if commits() != 1 || gitIn("show", "main:SPECS.md") != "The answer is unspecified." {
		t.Fatalf("SPECS.md reached main without a spec change")
	}

	// With a SPEC_CHANGE_REQUEST citing that passing attestation: committed.
	mu.Lock()
	evidence = pass
	mu.Unlock()
	r4 := startRun(spec.ID)
	waitEnd(r4, "committed")
	if k := kinds(receipts(r4)); !strings.Contains(k, "SpecChangeRequest") || !strings.Contains(k, "CommitReceipt") {
		t.Errorf("run %s's receipts = %s; want the merged spec change and the commit", r4, k)
	}
	if got := gitIn("show", "main:SPECS.md"); got != "The answer is 42." {
		t.Errorf("SPECS.md on main = %q; want the change", got)
	}
	if commits() != 2 {
		t.Errorf("commits on main = %d; want 2", commits())
	}
}

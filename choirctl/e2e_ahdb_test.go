package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// notingModel answers a headless run's objective with three tool calls
// in one reply: a CONJECTURE and an OBSERVATION through choir.run.note,
// and choir.fs.write of the right answer; everything else is the demo
// model's.
type notingModel struct{ fallback *callerModel }

func (m *notingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 {
		last := req.Messages[len(req.Messages)-1]
		var text string
		json.Unmarshal(last.Content, &text)
		if last.Role == "user" && strings.Contains(text, "[choir headless run ") {
			call := func(i int, tool string, args map[string]any) map[string]any {
				b, _ := json.Marshal(args)
				return map[string]any{"id": fmt.Sprintf("call_%d_%d", time.Now().UnixNano(), i), "type": "function",
					"function": map[string]any{"name": openai.WireName(tool), "arguments": string(b)}}
			}
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				call(1, "choir.run.note", map[string]any{"type": "CONJECTURE", "claim": "answer.txt must hold exactly 42", "test": "sh test.sh",
					"edge": "a trailing blank", "delta_o": "one line to change", "scope": "answer.txt"}),
				call(2, "choir.run.note", map[string]any{"type": "OBSERVATION", "text": "test.sh greps answer.txt for 42"}),
				call(3, "choir.fs.write", map[string]any{"path": "answer.txt", "op": "overwrite", "content": "42\n"}),
			}}, "tool_calls")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.fallback.ServeHTTP(w, r)
}

// The state vector end to end (issue 25 item 7): a headless run of agent
// ah-1 gets its typed notes (an observation, a hypothesis citing it,
// conjectures, a drive, a belief, a hyperthesis, and an observation
// citing a receipt that does not exist) and an attestation supporting
// some of them, through the admin API's POST /run/{id}/note and
// /run/{id}/verify as an operator files them, besides the two notes the
// run's agent files itself with choir.run.note. `choirctl state --json` is
// read while the run verifies; choird is killed with SIGKILL and started
// again, and the state vector it rebuilds from the receipts is the same,
// byte for byte. The run then commits, and the state after a second kill
// is again the one before it.
func TestStateVectorRebuiltAfterKill(t *testing.T) {
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
	for name, body := range map[string]string{
		"answer.txt": "41\n",
		"test.sh":    "#!/bin/sh\ngrep -qx 42 answer.txt || { echo 'FAIL: answer.txt is not 42'; exit 1; }\necho 'ok  answer'\n",
		".gitignore": "gate\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "a failing test")
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
	}); err != nil {
		t.Fatal(err)
	}

	// The model files two notes with choir.run.note and writes the right
	// answer, in one reply of three tool calls.
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: &notingModel{fallback: &callerModel{call: func(string) (string, string, bool) { return "", "", false }}}}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"ah-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		cfg["headless"] = map[string]any{"verifiers": map[string]any{"test": map[string]any{
			"command": []string{"sh", "-c", "while [ ! -e gate ]; do sleep 1; done; sh test.sh"}, "timeout_s": 600}}}
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "ah-1", "e2e1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	report := func() string { return "choird:\n" + tail(d.stderr.String(), 4000) }

	var item ctl.WorkItem
	out, stderr, code := ctlRun(t, home, "", "work", "add", "ah-1", "make the failing test in this repo pass",
		"--accept", "sh test.sh passes", "--verifier", "test", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &item) != nil || item.ID == "" {
		t.Fatalf("work add = %d %q %q", code, out, stderr)
	}
	var run ctl.Run
	if out, stderr, code := ctlRun(t, home, "", "run", "start", item.ID, "--json"); code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("run start = %d %q %q", code, out, stderr)
	}
	waitRun := func(want string) ctl.RunDetail {
		t.Helper()
		var rd ctl.RunDetail
		waitUntil(t, "run "+run.ID+" "+want, 5*time.Minute, func() bool {
			out, _, code := ctlRun(t, home, "", "run", "show", run.ID, "--json")
			if code != 0 || json.Unmarshal([]byte(out), &rd) != nil {
				return false
			}
			if ended := map[string]bool{"committed": true, "failed": true, "discarded": true, "cancelled": true}; ended[rd.Run.Status] && rd.Run.Status != want {
				rs, _, _ := ctlRun(t, home, "", "run", "receipts", run.ID)
				t.Fatalf("run %s ended %s, not %s; its receipts:\n%s\n%s", run.ID, rd.Run.Status, want, rs, report())
			}
			return rd.Run.Status == want
		}, report)
		return rd
	}
	rd := waitRun("verifying")

	// The notes and an attestation, as the operator appends them.
	admin := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", config.Home{Dir: home}.AdminSocket())
	}}}
	post := func(path string, body any) string {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := admin.Post("http://choird"+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var a ctl.Appended
		if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &a) != nil {
			t.Fatalf("POST %s %s = %d %s", path, b, resp.StatusCode, data)
		}
		return a.Receipt.Ref()
	}
	note := func(n map[string]any) string { return post("/run/"+run.ID+"/note", n) }
	obs := note(map[string]any{"type": "OBSERVATION", "text": "answer.txt held 41 on main"})
	hyp := note(map[string]any{"type": "HYPOTHESIS", "text": "test.sh wants 42", "test": "sh test.sh after writing 42", "budget": map[string]any{"tool_calls": 2}, "cites": []string{obs}})
	note(map[string]any{"type": "CONJECTURE", "claim": "test.sh reads answer.txt only", "test": "grep -c answer.txt test.sh", "edge": "symlinked answer.txt", "delta_o": "one file to fix", "scope": "test.sh"})
	conj := note(map[string]any{"type": "CONJECTURE", "claim": "42 is the only accepted answer", "test": "sh test.sh with 43", "edge": "trailing blanks", "delta_o": "no other fix", "scope": "answer.txt"})
	note(map[string]any{"type": "DRIVE", "text": "make test.sh pass", "anti_drive": "never edit test.sh", "cites": []string{conj}})
	note(map[string]any{"type": "BELIEVE", "text": "the verifier runs test.sh", "trigger": "headless.verifiers changes", "effect": "what passing means"})
	note(map[string]any{"type": "HYPERTHESIS", "text": "nothing checks answer.txt's encoding", "bound": "add an encoding verifier"})
	bad := note(map[string]any{"type": "OBSERVATION", "text": "seen elsewhere", "cites": []string{"r-000000000000#1"}})
	post("/run/"+run.ID+"/verify", map[string]any{"verifier": "operator-check", "passed": true, "summary": "checked by hand", "supports": []string{obs, hyp, bad}})

	state := func() (string, ctl.AHDBState) {
		t.Helper()
		out, stderr, code := ctlRun(t, home, "", "state", "--agent", "ah-1", "--json")
		var st ctl.AHDBState
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("state --json = %d %q %q", code, out, stderr)
		}
		return out, st
	}
	kill := func() {
		t.Helper()
		d.cmd.Process.Signal(syscall.SIGKILL)
		err := <-d.done
		d.done <- err // for its cleanup
		d = startChoird(t, home, env)
		waitReady(t, home, d)
	}

	before, st := state()
	var asserted []string
	for _, a := range st.Assert {
		asserted = append(asserted, a.Ref)
	}
	if strings.Join(asserted, " ") != obs+" "+hyp {
		t.Errorf("ASSERT = %q; want the observation and the hypothesis promoted", asserted)
	}
	if len(st.Refused) != 1 || st.Refused[0].Ref != bad || !strings.Contains(st.Refused[0].Why, "r-000000000000#1, which is no earlier receipt") {
		t.Errorf("Refused = %+v; want %s refused for citing a receipt that does not exist", st.Refused, bad)
	}
	if st.PlanNext == nil || st.PlanNext.Conjecture != conj {
		t.Errorf("plan_next = %+v; want %s, the conjecture the drive cites", st.PlanNext, conj)
	}
	if len(st.Drive) != 1 || len(st.Believe) != 1 || len(st.Hyperthesis) != 1 || len(st.Conjectures) != 3 || len(st.Hypothesize) != 0 || st.Runs[run.ID] != "verifying" {
		t.Errorf("state = %s", before)
	}
	if st.Conjectures[0].Claim != "answer.txt must hold exactly 42" || !strings.HasPrefix(st.Conjectures[0].Ref, run.ID+"#") {
		t.Errorf("conjectures = %+v; want first the one the agent filed with choir.run.note", st.Conjectures)
	}
	human, _, _ := ctlRun(t, home, "", "state", "--agent", "ah-1")
	for _, s := range []string{"PLAN NEXT", "test " + conj, "REFUSED (1)", "HYPERTHESIS (1)", "(unbounded)", "anti-drive: never edit test.sh"} {
		if !strings.Contains(human, s) {
			t.Errorf("choirctl state lacks %q:\n%s", s, human)
		}
	}

	// choird killed -9 mid-verification: the same state vector after.
	kill()
	if after, _ := state(); after != before {
		t.Fatalf("state vector after the kill differs:\nbefore %s\nafter  %s\n%s", before, after, report())
	}

	// The run commits; the work item is asserted done; a second kill
	// changes nothing either.
	if err := os.WriteFile(filepath.Join(rd.Run.Worktree, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitRun("committed")
	done, st := state()
	if n := len(st.Assert); n != 3 || !strings.Contains(st.Assert[2].Text, "work item "+item.ID+" is done") {
		t.Errorf("ASSERT after the commit = %+v; want the work item done last", st.Assert)
	}
	kill()
	if after, _ := state(); after != done {
		t.Fatalf("state vector after the second kill differs:\nbefore %s\nafter  %s", done, after)
	}
}

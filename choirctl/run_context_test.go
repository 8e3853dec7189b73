package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/headless/runner"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
)

// `choirctl run context` prints the context pack a run was given, rebuilt
// by choird from its ContextFootprint receipt and the object store: the
// parts by hash, what was left out, then the very prompt; --json gives it
// to scripts; a run without a footprint, an unknown run and a changed
// object are refused saying what is wrong.
func TestRunContextThroughChoirctl(t *testing.T) {
	ctx := context.Background()
	home := config.Home{Dir: t.TempDir()}
	objs, err := objects.Open(filepath.Join(home.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	d := headless.New(headless.NewMemStore())
	it, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "a1", Description: "fix the loader", Acceptance: []string{"go test passes"}, Risk: headless.RiskLow})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Mood: "CALM", Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := d.StartRun(ctx, headless.NewRun{WorkItem: anotherItem(t, d), Mood: "CALM", Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.MarkRunning(ctx, run.ID, strings.Repeat("c", 40), "/tmp/wt/"+run.ID, ""); err != nil {
		t.Fatal(err)
	}
	texts := []string{"Work item: fix the loader\n", "Plan next: read loader.go first\n"}
	fp := runner.Footprint{Budget: 8000, Tokens: len(texts[0]+texts[1]) / 4, Mood: "CALM", Repo: "/srv/ws", Target: "main", Base: strings.Repeat("c", 40),
		Tools: []string{"choir.fs.read"}, Cites: []string{}, LeftOut: []runner.Omission{{What: "earlier runs", Count: 2}}}
	var parts []string
	for i, name := range []string{"work_item", "plan_next"} {
		h, err := objs.Put([]byte(texts[i]))
		if err != nil {
			t.Fatal(err)
		}
		fp.Parts = append(fp.Parts, runner.PackPart{Name: name, Object: h, Tokens: len(texts[i]) / 4})
		parts = append(parts, h)
	}
	if fp.Objective, err = objs.Put([]byte(texts[0] + texts[1])); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(fp)
	rec, _, err := d.Record(ctx, run.ID, headless.KindContextFootprint, body, append(parts, fp.Objective), "footprint")
	if err != nil {
		t.Fatal(err)
	}
	serveRunContexts(t, home, runner.Contexts{Director: d, Objects: objs})
	dir := home.Dir

	out, stderr, code := ctlRun(t, dir, "", "run", "context", run.ID)
	if code != 0 {
		t.Fatalf("run context = %d %q", code, stderr)
	}
	for _, want := range []string{"footprint  " + rec.Ref(), "left out   2 earlier runs", "work_item  sha256:" + parts[0], "plan_next  sha256:" + parts[1],
		"--- prompt ---\n" + texts[0] + texts[1]} {
		if !strings.Contains(out, want) {
			t.Errorf("run context output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = ctlRun(t, dir, "", "run", "context", "--json", run.ID)
	var rc ctl.RunContext
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if code != 0 || dec.Decode(&rc) != nil || rc.Prompt != texts[0]+texts[1] || rc.Objective != fp.Objective || len(rc.Parts) != 2 ||
		rc.Parts[1].Name != "plan_next" || rc.Receipt != rec.Ref() || rc.Mood != "CALM" {
		t.Fatalf("run context --json = %d %s; want the footprint and the prompt", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{queued.ID}, 1, "no ContextFootprint receipt"},
		{[]string{"r-0123456789ab"}, 1, "r-0123456789ab"},
		{[]string{}, 2, "usage: choirctl run context"},
	} {
		_, stderr, code := ctlRun(t, dir, "", append([]string{"run", "context"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("run context %q = %d %q; want exit %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}

	// An object the footprint names changed: the context cannot be
	// rebuilt, and choirctl says which.
	p, _ := objs.Path(parts[1])
	if err := os.WriteFile(p, []byte("Plan next: something else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := ctlRun(t, dir, "", "run", "context", run.ID); code != 1 || !strings.Contains(stderr, "plan_next") || !strings.Contains(stderr, parts[1]) {
		t.Errorf("run context with a changed object = %d %q; want refused naming the part and its object", code, stderr)
	}
}

func anotherItem(t *testing.T, d *headless.Director) string {
	t.Helper()
	it, err := d.AddWorkItem(context.Background(), headless.NewWorkItem{Agent: "a1", Description: "another", Acceptance: []string{"a"}, Risk: headless.RiskLow})
	if err != nil {
		t.Fatal(err)
	}
	return it.ID
}

// serveRunContexts serves choird's real admin handler with rc on home's
// admin socket.
func serveRunContexts(t *testing.T, home config.Home, rc control.RunContexts) {
	t.Helper()
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	p := control.New(home, lm)
	p.SetRunContexts(rc)
	os.MkdirAll(filepath.Dir(home.AdminSocket()), 0o700)
	l, err := net.Listen("unix", home.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

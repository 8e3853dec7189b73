package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// toolErr is a memory tool's refusal as choird/memory returns it.
type toolErr struct{ code, msg string }

func (e toolErr) Error() string    { return e.msg }
func (e toolErr) ToolCode() string { return e.code }

// fakeMemory records what the admin API hands the memory tools.
type fakeMemory struct {
	got []string
	err error
}

var _ Memory = (*fakeMemory)(nil)

func (f *fakeMemory) answer(call string) (json.RawMessage, error) {
	f.got = append(f.got, call)
	if f.err != nil {
		return nil, f.err
	}
	return json.RawMessage(`{"status":"success","summary":"done","agent":"a","hits":[{"agent":"a","store":"knowledge","document_id":"d","content_hash":"sha256:x","score":1,"text":"t"}]}`), nil
}
func (f *fakeMemory) OperatorQuery(_ context.Context, agent string, in json.RawMessage) (json.RawMessage, error) {
	return f.answer("search " + agent + " " + string(in))
}
func (f *fakeMemory) Upsert(_ context.Context, agent, _ string, in json.RawMessage) (json.RawMessage, error) {
	return f.answer("upsert " + agent + " " + string(in))
}
func (f *fakeMemory) List(_ context.Context, agent string, limit int) (json.RawMessage, error) {
	return f.answer("list " + agent + " " + strings.Repeat("*", limit))
}

// The memory routes hand the tools the agent named in the path and the
// body as sent, answer the tool's JSON, and turn a tool's refusal into the
// matching HTTP status with its message.
func TestMemoryRoutes(t *testing.T) {
	home := config.Home{Dir: t.TempDir()}
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	p := New(home, lm)
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	defer srv.Close()
	c := ctl.NewClient(sock)
	defer c.Close()
	ctx := context.Background()

	if _, err := c.MemoryKnowledge(ctx, "a", 0); !isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("without memory: %v; want 503", err)
	}
	f := &fakeMemory{}
	p.SetMemory(f)
	ans, err := c.MemorySearch(ctx, "a", rpc.MemoryQuery{Store: "knowledge", Query: "q"})
	if err != nil || len(ans.Hits) != 1 || ans.Hits[0].ContentHash != "sha256:x" {
		t.Fatalf("search = %+v, %v", ans, err)
	}
	c.MemoryUpsert(ctx, "a", rpc.MemoryUpsert{Op: "delete", Key: "k"})
	c.MemoryKnowledge(ctx, "a", 3)
	want := []string{`search a {"store":"knowledge","query":"q"}`, `upsert a {"op":"delete","key":"k"}`, `list a ***`}
	if strings.Join(f.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tools got\n%s\nwant\n%s", strings.Join(f.got, "\n"), strings.Join(want, "\n"))
	}
	for code, status := range map[string]int{"invalid_input": 400, "forbidden": 403, "not_found": 404, "memory_failed": 500} {
		f.err = toolErr{code, "why " + code}
		_, err := c.MemoryUpsert(ctx, "a", rpc.MemoryUpsert{Op: "insert", Text: "x"})
		var e *ctl.Error
		if !errors.As(err, &e) || e.Status != status || e.Code != code || e.Message != "why "+code {
			t.Errorf("tool error %s = %v; want HTTP %d with its message", code, err, status)
		}
	}
}

func isStatus(err error, status int) bool {
	var e *ctl.Error
	return errors.As(err, &e) && e.Status == status
}

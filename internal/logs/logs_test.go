package logs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/testkit"
)

func TestLinesCarryTheDesignFields(t *testing.T) {
	dir := t.TempDir()
	m, err := NewManager(dir, 1000, slog.LevelInfo, NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Choird().With(KeySystem, "lifecycle").Info("agent started", KeySession, "s-1", KeyLane, "edge")
	al, err := m.Agent("agent-1")
	if err != nil {
		t.Fatal(err)
	}
	al.Warn("tool timed out", KeySession, "s-1", KeyLane, "core:refactor")
	for path, want := range map[string]map[string]string{
		filepath.Join(dir, "choird.log"):  {"level": "INFO", "source": "choird", "session_id": "s-1", "lane": "edge", "msg": "agent started", "system": "lifecycle"},
		filepath.Join(dir, "agent-1.log"): {"level": "WARN", "source": "agent-1", "session_id": "s-1", "lane": "core:refactor", "msg": "tool timed out"},
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		if err := json.Unmarshal(data, &line); err != nil {
			t.Fatalf("%s: not one JSON line: %q", path, data)
		}
		if _, ok := line["time"]; !ok {
			t.Errorf("%s: no time field in %q", path, data)
		}
		for k, v := range want {
			if line[k] != v {
				t.Errorf("%s: %s = %v; want %q", path, k, line[k], v)
			}
		}
	}
	if _, err := m.Agent("../etc"); err == nil {
		t.Error("Agent(\"../etc\") opened a log outside the logs directory")
	}
}

func TestRedactionOnEveryPath(t *testing.T) {
	const secret = `s3cr"et-value\x`
	dir := t.TempDir()
	red := NewRedactor(secret, "ab") // "ab" is too short to redact safely
	m, err := NewManager(dir, 1000, slog.LevelDebug, red)
	if err != nil {
		t.Fatal(err)
	}
	log := m.Choird()
	log.Info("message carrying " + secret)
	log.Info("attr", "token", secret)
	log.Error("failure", KeyError, errors.New("dial https://api/bot"+secret+"/getMe: refused"))
	log.Info("group", slog.Group("g", "k", secret))
	al, _ := m.Agent("a1")
	al.Debug("agent " + secret)
	m.Close()
	for _, name := range []string{"choird.log", "a1.log"} {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if bytes.Contains(data, []byte("et-value")) {
			t.Errorf("%s holds the secret: %s", name, data)
		}
		if !bytes.Contains(data, []byte(Redacted)) {
			t.Errorf("%s has no redaction marker: %s", name, data)
		}
	}
	// A new secret set takes effect at once.
	red.Set([]string{"rotated-secret"})
	if got := red.String("x rotated-secret y " + secret); got != "x "+Redacted+" y "+secret {
		t.Errorf("after Set: %q", got)
	}
}

func TestArchivePastThreshold(t *testing.T) {
	dir := t.TempDir()
	m, err := NewManager(dir, 100, slog.LevelInfo, NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	log := m.Choird()
	for i := range 250 {
		log.Info("line", "i", i)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "archive", "choird", "*.log.gz"))
	if len(archives) != 2 {
		t.Fatalf("archives = %v; want 2 after 250 lines at a threshold of 100", archives)
	}
	total := 0
	for _, a := range archives {
		total += gunzipLines(t, a)
	}
	active, _ := os.ReadFile(filepath.Join(dir, "choird.log"))
	total += bytes.Count(active, []byte("\n"))
	if total != 250 {
		t.Errorf("lines across archives and active file = %d; want 250 (none lost)", total)
	}
}

func TestArchiveAgentAtSessionEnd(t *testing.T) {
	dir := t.TempDir()
	m, err := NewManager(dir, 100, slog.LevelInfo, NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	al, _ := m.Agent("agent-1")
	al.Info("one")
	al.Info("two")
	if err := m.ArchiveAgent("agent-1"); err != nil {
		t.Fatal(err)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "archive", "agent-1", "*.log.gz"))
	if len(archives) != 1 || gunzipLines(t, archives[0]) != 2 {
		t.Fatalf("agent archives = %v; want one holding 2 lines", archives)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "agent-1.log")); fi.Size() != 0 {
		t.Errorf("active agent log has %d bytes after archiving; want 0", fi.Size())
	}
	// Archiving an empty log makes no archive.
	if err := m.ArchiveAgent("agent-1"); err != nil {
		t.Fatal(err)
	}
	if archives, _ := filepath.Glob(filepath.Join(dir, "archive", "agent-1", "*.log.gz")); len(archives) != 1 {
		t.Errorf("archives after an empty archive = %d; want still 1", len(archives))
	}
}

func TestLineCountSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "choird.log")
	os.WriteFile(path, bytes.Repeat([]byte("{}\n"), 99), 0o600)
	f, err := OpenFile(path, filepath.Join(dir, "archive"), 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("{}\n")) // the 100th line
	f.Write([]byte("{}\n")) // archives first
	if archives, _ := filepath.Glob(filepath.Join(dir, "archive", "*.log.gz")); len(archives) != 1 {
		t.Errorf("archives = %d; want 1 (the count must include lines from before the restart)", len(archives))
	}
}

func gunzipLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFollowSnapshotThenTail(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(filepath.Join(dir, "choird.log"), filepath.Join(dir, "archive"), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("old\n"))
	var out testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, f.Path(), &out, nil) }()
	waitFor(t, "the snapshot", func() bool { return out.String() == "old\n" })
	f.Write([]byte("new\n"))
	waitFor(t, "the appended line", func() bool { return out.String() == "old\nnew\n" })
	f.Write([]byte("third\n"))
	f.Write([]byte("after-archive\n")) // archives the first three, then continues
	waitFor(t, "the line after archiving", func() bool { return strings.HasSuffix(out.String(), "after-archive\n") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Follow = %v; want nil after cancel", err)
	}
}

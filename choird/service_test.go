package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestForJournal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"time":"2026-11-25T07:00:00.1Z","level":"INFO","source":"choird","msg":"choird ready"}` + "\n",
			`<6>{"level":"INFO","source":"choird","msg":"choird ready"}` + "\n"},
		{`{"time":"2026-11-25T07:00:00Z","level":"ERROR","msg":"x"}` + "\n", `<3>{"level":"ERROR","msg":"x"}` + "\n"},
		{`{"time":"2026-11-25T07:00:00Z","level":"WARN","msg":"x"}` + "\n", `<4>{"level":"WARN","msg":"x"}` + "\n"},
		{`{"time":"2026-11-25T07:00:00Z","level":"DEBUG","msg":"x"}` + "\n", `<7>{"level":"DEBUG","msg":"x"}` + "\n"},
		{`{"time":"t","level":"WARN+2","msg":"x"}` + "\n", `{"level":"WARN+2","msg":"x"}` + "\n"},
		// Lines not in slog's shape pass unchanged.
		{"choird: plain text\n", "choird: plain text\n"},
		{`{"time":"unterminated`, `{"time":"unterminated`},
		{`{"time":"t"}`, `{"time":"t"}`},
		{``, ``},
	} {
		if got := string(forJournal([]byte(c.in))); got != c.want {
			t.Errorf("forJournal(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// journalMirror rewrites lines only when stderr really is the journal's
// stream: $JOURNAL_STREAM names stderr's device and inode.
func TestJournalMirrorOnlyOnTheJournalStream(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st := fi.Sys().(*syscall.Stat_t)
	line := `{"time":"2026-11-25T07:00:00Z","level":"INFO","msg":"m"}` + "\n"
	for _, c := range []struct {
		name, stream, want string
	}{
		{"journal", fmt.Sprintf("%d:%d", st.Dev, st.Ino), `<6>{"level":"INFO","msg":"m"}` + "\n"},
		{"redirected", fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), line},
		{"no journal", "", line},
	} {
		f.Truncate(0)
		f.Seek(0, 0)
		journalMirror(f, c.stream).Write([]byte(line))
		got, _ := os.ReadFile(f.Name())
		if string(got) != c.want {
			t.Errorf("%s: stderr got %q; want %q", c.name, got, c.want)
		}
	}
	var buf bytes.Buffer // not a file: never the journal
	journalMirror(&buf, "1:2").Write([]byte(line))
	if buf.String() != line {
		t.Errorf("a buffer got %q; want the line unchanged", buf.String())
	}
}

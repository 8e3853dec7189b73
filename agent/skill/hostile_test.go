package skill

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileSkills: skill files that are too large, too deep, not UTF-8 or
// not files fail the load, each fault naming the file, where and the limit,
// quickly and without touching the directory.
func TestHostileSkills(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "skills", "summarize.json"))
	if err != nil {
		t.Fatal(err)
	}
	swap := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	for _, tc := range []struct {
		name string
		data string // "" with fifo: a FIFO instead of a file
		fifo bool
		want []string
	}{
		{"nested a million levels", strings.Repeat("[", 1_000_000), false,
			[]string{"hostile.json: read: line 1:65 (byte 64): JSON nested deeper than the limit of 64 levels"}},
		{"input schema nested past the limit", swap(`"max_steps": 5`, `"max_steps": 5, "input_schema": `+strings.Repeat(`{"type":"object","properties":{"x":`, 35)+`{}`+strings.Repeat("}}", 35)), false,
			[]string{"hostile.json: read: line 13:", "limit of 64 levels"}},
		{"over 1 MiB", swap("Read the file the user named.", strings.Repeat("r", 1<<20)), false,
			[]string{"hostile.json: read: the JSON document is", "over the limit of 1 MiB"}},
		{"invalid UTF-8 in an objective", swap("Read the file", "Read th\xe9 file"), false,
			[]string{"hostile.json: read: line 7:", "invalid UTF-8 (byte 0xe9)"}},
		{"unpaired surrogate escape in the description", swap("Read a file", `Read a \udfff file`), false,
			[]string{"hostile.json: read: line 3:", "second half of a UTF-16 surrogate pair"}},
		{"a FIFO named like a skill", "", true, []string{"hostile.json: read:", "not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "summarize.json"), good, 0o644)
			hostile := filepath.Join(dir, "hostile.json")
			if tc.fifo {
				if err := syscall.Mkfifo(hostile, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			} else {
				os.WriteFile(hostile, []byte(tc.data), 0o644)
			}
			var before []byte
			if !tc.fifo {
				before, _ = os.ReadFile(hostile)
			}
			done := make(chan struct{})
			var r *Registry
			var err error
			go func() { r, err = LoadDir(dir, allTools); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("LoadDir did not return within a minute")
			}
			if err == nil || r != nil {
				t.Fatalf("LoadDir = %v, %v; want a refusal and no registry", r, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadDir = %v\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "summarize.json") {
				t.Errorf("LoadDir = %v; summarize.json has no fault", err)
			}
			if !tc.fifo {
				if after, _ := os.ReadFile(hostile); string(after) != string(before) {
					t.Error("the skill file changed on a refused load")
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Errorf("the skill directory holds %d entries after the load; want 2", len(ents))
			}
		})
	}
}

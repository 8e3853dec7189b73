package tool

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dirState records the names, modes and contents of dir's files.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, _ := os.Lstat(p)
		s := fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			s += string(data)
		}
		out[e.Name()] = s
	}
	return out
}

// TestHostileManifests: manifests that are too large, too deep, not UTF-8
// or not files are refused, each naming the file, where and the limit;
// the load fails as a whole (no registry with part of the tools) without
// touching the directory, and quickly.
func TestHostileManifests(t *testing.T) {
	deepSchema := strings.Repeat(`{"type":"object","properties":{"x":`, 35) + `{"type":"string"}` + strings.Repeat("}}", 35)
	for _, tc := range []struct {
		name string
		data func() string // the manifest; nil: setup makes the file
		fifo bool
		want []string
	}{
		{"nested a million levels", func() string { return strings.Repeat("[", 1_000_000) }, false,
			[]string{"hostile.json: read: line 1:65 (byte 64): JSON nested deeper than the limit of 64 levels"}},
		{"input schema nested past the limit", func() string {
			return strings.Replace(manifest("acme.deep", ""), `{"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false}`, deepSchema, 1)
		}, false, []string{"hostile.json: read: line 3:", "limit of 64 levels"}},
		{"over 1 MiB", func() string {
			return strings.Replace(manifest("acme.big", ""), "A test tool.", strings.Repeat("a", 1<<20), 1)
		}, false, []string{"hostile.json: read: the JSON document is", "over the limit of 1 MiB (1048576 bytes)"}},
		{"invalid UTF-8 in the description", func() string {
			return strings.Replace(manifest("acme.utf", ""), "A test tool.", "A te\xc3st tool.", 1)
		}, false, []string{"hostile.json: read: line 2:51 (byte 52): invalid UTF-8 (byte 0xc3): JSON text must be valid UTF-8"}},
		{"unpaired surrogate escape in the name", func() string {
			return strings.Replace(manifest("acme.sur", ""), `"acme.sur"`, `"acme.sur\ud800"`, 1)
		}, false, []string{"hostile.json: read: line 2:28 (byte 29)", "surrogate pair without its second half"}},
		{"a FIFO named like a manifest", nil, true, []string{"hostile.json: read:", "not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			global := t.TempDir()
			writeTool(t, global, "good", manifest("acme.good", ""), okScript, 0o755)
			if tc.fifo {
				if err := syscall.Mkfifo(filepath.Join(global, "hostile.json"), 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			} else {
				writeTool(t, global, "hostile", tc.data(), okScript, 0o755)
			}
			before := dirState(t, global)
			done := make(chan struct{})
			var r *Registry
			var err error
			go func() { r, err = Load(nil, global, ""); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("Load did not return within a minute")
			}
			if err == nil || r != nil {
				t.Fatalf("Load = %v, %v; want a refusal and no registry", r, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load = %v\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "good.json") {
				t.Errorf("Load = %v; the good manifest has no fault", err)
			}
			after := dirState(t, global)
			for k, v := range before {
				if after[k] != v {
					t.Errorf("%s changed on a refused load", k)
				}
			}
			if len(after) != len(before) {
				t.Errorf("the tool directory holds %d files after the load; want %d", len(after), len(before))
			}
		})
	}
}

// TestParseManifestLimits: the same limits hold for a manifest that arrives
// as data (a proposal) rather than as a file.
func TestParseManifestLimits(t *testing.T) {
	for name, data := range map[string]string{
		"2M levels":    strings.Repeat(`{"a":`, 200_000),
		"over 1 MiB":   `{"llm":{"name":"` + strings.Repeat("a", 1<<20) + `"}}`,
		"invalid byte": "{\"llm\":{\"name\":\"\xff\"}}",
	} {
		_, err := ParseManifest("proposal.json", []byte(data))
		if err == nil || !strings.Contains(err.Error(), "proposal.json: ") || !strings.Contains(err.Error(), "limit") && !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("ParseManifest(%s) = %v; want a refusal naming the file and the limit", name, err)
		}
	}
}

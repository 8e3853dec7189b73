package workspace

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"choir/agent/tool"
)

func searchFixture(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		"src/a.go":      "package a\n\nfunc Hello() {}\n// hello world\n",
		"src/b/c.go":    "package c\n\nvar hello = 1\n",
		"README.md":     "Hello README\n",
		".hidden/h.txt": "hello hidden\n",
		".git/config":   "hello git\n",
		"src/.git/x":    "hello nested git\n",
		"bin.dat":       "hello\x00binary\n",
		".gitignore":    "src/b/\n",
		"crlf.txt":      "hello crlf\r\nbye\r\n",
		"uni.txt":       "naïve hello\n",
		"long.txt":      "hello " + repeat("z", 1000) + "\n",
	}
	for rel, content := range files {
		mkfile(t, ws, rel, content)
	}
	if err := os.Symlink("src/a.go", filepath.Join(ws, "link.go")); err != nil {
		t.Fatal(err)
	}
	return ws
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestSearch(t *testing.T) {
	ws := searchFixture(t)
	longText := "hello " + repeat("z", MaxMatchText-6) + " [...]"
	tests := []struct {
		name, input string
		code        string
		want        []Match
		truncated   bool
	}{
		{
			name:  "regex over the workspace",
			input: `{"pattern": "[Hh]ello"}`,
			want: []Match{
				{".hidden/h.txt", 1, "hello hidden"},
				{"README.md", 1, "Hello README"},
				{"crlf.txt", 1, "hello crlf"},
				{"long.txt", 1, longText},
				{"src/a.go", 3, "func Hello() {}"},
				{"src/a.go", 4, "// hello world"},
				{"src/b/c.go", 3, "var hello = 1"},
				{"uni.txt", 1, "naïve hello"},
			},
		},
		{
			name:  "fixed string with metacharacters",
			input: `{"pattern": "Hello() {", "fixed_strings": true}`,
			want:  []Match{{"src/a.go", 3, "func Hello() {}"}},
		},
		{
			name:  "ignore case",
			input: `{"pattern": "HELLO WORLD", "ignore_case": true, "path": "src"}`,
			want:  []Match{{"src/a.go", 4, "// hello world"}},
		},
		{
			name:  "directory target",
			input: `{"pattern": "^package", "path": "src/"}`,
			want:  []Match{{"src/a.go", 1, "package a"}, {"src/b/c.go", 1, "package c"}},
		},
		{
			name:  "file target",
			input: `{"pattern": "hello|Hello", "path": "./src/a.go"}`,
			want:  []Match{{"src/a.go", 3, "func Hello() {}"}, {"src/a.go", 4, "// hello world"}},
		},
		{
			name:      "max results",
			input:     `{"pattern": "hello", "ignore_case": true, "max_results": 2}`,
			want:      []Match{{".hidden/h.txt", 1, "hello hidden"}, {"README.md", 1, "Hello README"}},
			truncated: true,
		},
		{
			name:  "exactly max results is not truncated",
			input: `{"pattern": "package", "path": "src", "max_results": 2}`,
			want:  []Match{{"src/a.go", 1, "package a"}, {"src/b/c.go", 1, "package c"}},
		},
		{name: "no match", input: `{"pattern": "nothing-matches-this"}`, want: []Match{}},
		{name: "missing path", input: `{"pattern": "x", "path": "nope"}`, code: tool.CodeNotFound},
		{name: "bad regex", input: `{"pattern": "("}`, code: tool.CodeInvalidInput},
		{name: "binary file target", input: `{"pattern": "hello", "path": "bin.dat"}`, code: tool.CodeBinaryFile},
		{name: "escape", input: `{"pattern": "x", "path": "../"}`, code: tool.CodePathRefused},
	}
	engines := []struct {
		name string
		opts Options
	}{{"walker", Options{NoRipgrep: true}}}
	if rg, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, struct {
			name string
			opts Options
		}{"ripgrep", Options{Ripgrep: rg}})
	}
	for _, eng := range engines {
		reg := registry(t, eng.opts)
		for _, tc := range tests {
			t.Run(eng.name+"/"+tc.name, func(t *testing.T) {
				m := call(t, reg, ws, "choir.fs.search", tc.input)
				if got := errCode(m); got != tc.code {
					t.Fatalf("choir.fs.search %s = %v; want code %q", tc.input, m, tc.code)
				}
				if tc.code != "" {
					return
				}
				raw, _ := json.Marshal(m["matches"])
				var got []Match
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("matches =\n%v\nwant\n%v", got, tc.want)
				}
				if m["truncated"] != tc.truncated || m["count"] != float64(len(tc.want)) {
					t.Errorf("truncated %v, count %v; want %v, %d", m["truncated"], m["count"], tc.truncated, len(tc.want))
				}
			})
		}
	}
}

func TestSearchRipgrepInstalled(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed (apt-get install ripgrep): the ripgrep variant of TestSearch did not run")
	}
	tools := Tools(Options{})
	for _, tl := range tools {
		if s, ok := tl.(*Search); ok && s.rg == "" {
			t.Error("Tools(Options{}) did not pick up rg from PATH")
		}
	}
}

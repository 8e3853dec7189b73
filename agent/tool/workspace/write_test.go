package workspace

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"choir/agent/tool"
)

func TestWrite(t *testing.T) {
	const abc = "a\nb\nc\n"
	tests := []struct {
		name    string
		initial *string // nil: the file does not exist
		input   string  // JSON members after "path": "f.txt"
		want    string  // the file afterwards
		code    string
	}{
		{name: "create", input: `"op": "create", "content": "new\n"`, want: "new\n"},
		{name: "create empty", input: `"op": "create", "content": ""`, want: ""},
		{name: "create existing refused", initial: ptr(abc), input: `"op": "create", "content": "x"`, code: tool.CodeExists},
		{name: "create existing with overwrite", initial: ptr(abc), input: `"op": "create", "content": "x", "overwrite": true`, want: "x"},
		{name: "overwrite", initial: ptr(abc), input: `"op": "overwrite", "content": "z\n"`, want: "z\n"},
		{name: "overwrite missing", input: `"op": "overwrite", "content": "z"`, code: tool.CodeNotFound},
		{name: "append", initial: ptr(abc), input: `"op": "append", "content": "d\n"`, want: abc + "d\n"},
		{name: "append missing", input: `"op": "append", "content": "d"`, code: tool.CodeNotFound},
		{name: "replace one line", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 2, "end_line": 2, "content": "B"`, want: "a\nB\nc\n"},
		{name: "replace with more lines", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 1, "end_line": 2, "content": "1\n2\n3\n"`, want: "1\n2\n3\nc\n"},
		{name: "delete lines", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 2, "end_line": 3, "content": ""`, want: "a\n"},
		{name: "replace the last line of a file without newline", initial: ptr("a\nb"), input: `"op": "replace_lines", "start_line": 2, "end_line": 2, "content": "B"`, want: "a\nB"},
		{name: "replace out of range", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 3, "end_line": 4, "content": "x"`, code: tool.CodeOutOfRange},
		{name: "replace without end_line", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 3, "content": "x"`, code: tool.CodeInvalidInput},
		{name: "replace end before start", initial: ptr(abc), input: `"op": "replace_lines", "start_line": 3, "end_line": 2, "content": "x"`, code: tool.CodeInvalidInput},
		{name: "insert at the top", initial: ptr(abc), input: `"op": "insert_at_line", "line": 1, "content": "0"`, want: "0\n" + abc},
		{name: "insert in the middle", initial: ptr(abc), input: `"op": "insert_at_line", "line": 3, "content": "x\ny\n"`, want: "a\nb\nx\ny\nc\n"},
		{name: "insert at the end", initial: ptr(abc), input: `"op": "insert_at_line", "line": 4, "content": "d"`, want: abc + "d\n"},
		{name: "insert after a last line without newline", initial: ptr("a\nb"), input: `"op": "insert_at_line", "line": 3, "content": "c"`, want: "a\nb\nc"},
		{name: "insert into an empty file", initial: ptr(""), input: `"op": "insert_at_line", "line": 1, "content": "x"`, want: "x\n"},
		{name: "insert out of range", initial: ptr(abc), input: `"op": "insert_at_line", "line": 5, "content": "x"`, code: tool.CodeOutOfRange},
		{name: "line operation on a binary file", initial: ptr("a\x00b\n"), input: `"op": "insert_at_line", "line": 1, "content": "x"`, code: tool.CodeBinaryFile},
		{name: "parameter of another op", initial: ptr(abc), input: `"op": "append", "content": "x", "line": 2`, code: tool.CodeInvalidInput},
		{name: "overwrite flag outside create", initial: ptr(abc), input: `"op": "append", "content": "x", "overwrite": true`, code: tool.CodeInvalidInput},
		{name: "unknown op", initial: ptr(abc), input: `"op": "delete", "content": ""`, code: tool.CodeInvalidInput},
	}
	reg := registry(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			file := filepath.Join(ws, "f.txt")
			if tc.initial != nil {
				mkfile(t, ws, "f.txt", *tc.initial)
			}
			m := call(t, reg, ws, "choir.fs.write", `{"path": "f.txt", `+tc.input+`}`)
			if got := errCode(m); got != tc.code {
				t.Fatalf("choir.fs.write %s = %v; want code %q", tc.input, m, tc.code)
			}
			if tc.code == "" {
				if got := readFile(t, file); got != tc.want {
					t.Errorf("file = %q; want %q", got, tc.want)
				}
				if m["total_lines"] != float64(len(splitLines([]byte(tc.want)))) || m["path"] != "f.txt" {
					t.Errorf("result %v; want path f.txt and the new line count", m)
				}
			} else if tc.initial != nil {
				// A refused operation leaves the file byte-identical.
				if got := readFile(t, file); got != *tc.initial {
					t.Errorf("after a failed %s the file is %q; want it unchanged %q", tc.name, got, *tc.initial)
				}
			} else if _, err := os.Stat(file); err == nil {
				t.Errorf("a failed %s created the file", tc.name)
			}
			if left := dirNames(t, ws); len(left) != 1 && !(tc.initial == nil && len(left) == 0) {
				t.Errorf("workspace holds %v after the call; want only f.txt (no temporary files)", left)
			}
		})
	}
}

func TestWriteCreatesParentsAndKeepsMode(t *testing.T) {
	ws := t.TempDir()
	reg := registry(t, Options{})
	m := call(t, reg, ws, "choir.fs.write", `{"path": "a/b/c.txt", "op": "create", "content": "x"}`)
	if m["status"] != "success" || m["created"] != true {
		t.Fatalf("create a/b/c.txt = %v", m)
	}
	if got := readFile(t, filepath.Join(ws, "a/b/c.txt")); got != "x" {
		t.Errorf("a/b/c.txt = %q", got)
	}
	fi, _ := os.Stat(filepath.Join(ws, "a/b/c.txt"))
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode = %v; want 0644", fi.Mode().Perm())
	}

	script := filepath.Join(ws, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho one\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(script, 0o750); err != nil {
		t.Fatal(err)
	}
	m = call(t, reg, ws, "choir.fs.write", `{"path": "run.sh", "op": "append", "content": "echo two\n"}`)
	if m["status"] != "success" {
		t.Fatalf("append = %v", m)
	}
	fi, _ = os.Stat(script)
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("mode after append = %v; want 0750 kept", fi.Mode().Perm())
	}

	// Through a symlink inside the workspace, the target changes and the
	// link stays a link.
	if err := os.Symlink("run.sh", filepath.Join(ws, "link.sh")); err != nil {
		t.Fatal(err)
	}
	call(t, reg, ws, "choir.fs.write", `{"path": "link.sh", "op": "insert_at_line", "line": 1, "content": "# head"}`)
	if got := readFile(t, script); got != "# head\n#!/bin/sh\necho one\necho two\n" {
		t.Errorf("run.sh through link.sh = %q", got)
	}
	if fi, _ := os.Lstat(filepath.Join(ws, "link.sh")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("link.sh is no longer a symlink")
	}

	// A directory is refused.
	if m := call(t, reg, ws, "choir.fs.write", `{"path": "a/b", "op": "overwrite", "content": "x"}`); errCode(m) != tool.CodeIsDirectory {
		t.Errorf("overwrite a directory = %v; want is_directory", m)
	}
}

func TestWriteAtomicCleansUp(t *testing.T) {
	ws := t.TempDir()
	mkfile(t, ws, "d/inner", "x")
	// Renaming a file over a non-empty directory fails after the temporary
	// file was written: it must be removed.
	if err := writeAtomic(filepath.Join(ws, "d"), []byte("data"), nil); err == nil {
		t.Fatal("writeAtomic over a directory = nil error")
	}
	if got := dirNames(t, ws); len(got) != 1 || got[0] != "d" {
		t.Errorf("workspace after a failed write = %v; want only d", got)
	}
	// A parent that is a file.
	reg := registry(t, Options{})
	mkfile(t, ws, "plain", "x")
	if m := call(t, reg, ws, "choir.fs.write", `{"path": "plain/new.txt", "op": "create", "content": "x"}`); errCode(m) != tool.CodeNotDirectory {
		t.Errorf("create under a file = %v; want not_directory", m)
	}
}

func ptr(s string) *string { return &s }

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

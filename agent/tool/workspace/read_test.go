package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/agent/tool"
)

func TestRead(t *testing.T) {
	ws := t.TempDir()
	mkfile(t, ws, "ten.txt", numbered(10))
	mkfile(t, ws, "nonl.txt", "a\nb\nc")
	mkfile(t, ws, "empty.txt", "")
	mkfile(t, ws, "big.txt", numbered(100)) // 100 lines of 7-9 bytes, 792 bytes
	mkfile(t, ws, "long.txt", strings.Repeat("x", 500)+"\nshort\n")
	mkfile(t, ws, "bin.dat", "ELF\x00\x01\x02binary")
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, Options{ReadCap: 200})
	tests := []struct {
		name, input string
		code        string
		content     string
		total       float64
		start, end  float64
		truncated   bool
	}{
		{name: "whole file", input: `{"path": "ten.txt"}`, content: numbered(10), total: 10, start: 1, end: 10},
		{name: "head", input: `{"path": "ten.txt", "head": 3}`, content: numbered(3), total: 10, start: 1, end: 3},
		{name: "head past the end", input: `{"path": "ten.txt", "head": 30}`, content: numbered(10), total: 10, start: 1, end: 10},
		{name: "tail", input: `{"path": "ten.txt", "tail": 2}`, content: "line 9\nline 10\n", total: 10, start: 9, end: 10},
		{name: "tail longer than the file", input: `{"path": "nonl.txt", "tail": 5}`, content: "a\nb\nc", total: 3, start: 1, end: 3},
		{name: "range", input: `{"path": "ten.txt", "start_line": 4, "end_line": 5}`, content: "line 4\nline 5\n", total: 10, start: 4, end: 5},
		{name: "range to the end", input: `{"path": "ten.txt", "start_line": 9}`, content: "line 9\nline 10\n", total: 10, start: 9, end: 10},
		{name: "range end clamped", input: `{"path": "ten.txt", "start_line": 10, "end_line": 99}`, content: "line 10\n", total: 10, start: 10, end: 10},
		{name: "end_line only", input: `{"path": "ten.txt", "end_line": 1}`, content: "line 1\n", total: 10, start: 1, end: 1},
		{name: "last line without newline", input: `{"path": "nonl.txt", "start_line": 3}`, content: "c", total: 3, start: 3, end: 3},
		{name: "line numbers", input: `{"path": "nonl.txt", "head": 2, "line_numbers": true}`, content: "1\ta\n2\tb\n", total: 3, start: 1, end: 2},
		{name: "empty file", input: `{"path": "empty.txt"}`, content: "", total: 0},
		{name: "cap stops at a line boundary", input: `{"path": "big.txt"}`, content: numbered(26), total: 100, start: 1, end: 26, truncated: true},
		{name: "cap with a range", input: `{"path": "big.txt", "start_line": 90}`, content: numbered(100)[len(numbered(89)):], total: 100, start: 90, end: 100},
		{name: "a line longer than the cap is cut", input: `{"path": "long.txt"}`, content: strings.Repeat("x", 200), total: 2, start: 1, end: 1, truncated: true},
		{name: "start past the end", input: `{"path": "ten.txt", "start_line": 11}`, code: tool.CodeOutOfRange},
		{name: "end before start", input: `{"path": "ten.txt", "start_line": 5, "end_line": 4}`, code: tool.CodeInvalidInput},
		{name: "head and tail", input: `{"path": "ten.txt", "head": 1, "tail": 1}`, code: tool.CodeInvalidInput},
		{name: "head and range", input: `{"path": "ten.txt", "head": 1, "start_line": 2}`, code: tool.CodeInvalidInput},
		{name: "zero lines", input: `{"path": "ten.txt", "head": 0}`, code: tool.CodeInvalidInput},
		{name: "binary", input: `{"path": "bin.dat"}`, code: tool.CodeBinaryFile},
		{name: "directory", input: `{"path": "dir"}`, code: tool.CodeIsDirectory},
		{name: "the root", input: `{"path": "."}`, code: tool.CodeIsDirectory},
		{name: "missing", input: `{"path": "nope.txt"}`, code: tool.CodeNotFound},
		{name: "under a file", input: `{"path": "ten.txt/x"}`, code: tool.CodeNotDirectory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := call(t, reg, ws, "choir.fs.read", tc.input)
			if got := errCode(m); got != tc.code {
				t.Fatalf("choir.fs.read %s = %v; want code %q", tc.input, m, tc.code)
			}
			if tc.code != "" {
				if e := m["error"].(map[string]any); tc.code != tool.CodeInvalidInput && e["path"] == nil {
					t.Errorf("error %v does not name the path", e)
				}
				return
			}
			if m["content"] != tc.content {
				t.Errorf("content = %q; want %q", m["content"], tc.content)
			}
			if m["total_lines"] != tc.total || m["start_line"] != tc.start || m["end_line"] != tc.end || m["truncated"] != tc.truncated {
				t.Errorf("total_lines %v, lines %v-%v, truncated %v; want %v, %v-%v, %v",
					m["total_lines"], m["start_line"], m["end_line"], m["truncated"], tc.total, tc.start, tc.end, tc.truncated)
			}
		})
	}
}

package workspace

import (
	"bytes"
	"io/fs"
	"os"
	"syscall"

	"choir/agent/tool"
)

// splitLines splits data into lines that keep their "\n"; a last line
// without one is a line too. Empty data has no lines.
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

func endsWithNewline(data []byte) bool { return len(data) > 0 && data[len(data)-1] == '\n' }

// terminate gives non-empty content a final newline unless it already has one
// or it becomes the last line of a file without one (keep is then true).
func terminate(content string, keep bool) string {
	if content == "" || content[len(content)-1] == '\n' || keep {
		return content
	}
	return content + "\n"
}

// replaceLines replaces lines start..end (1-based, inclusive) of old.
func replaceLines(old []byte, start, end int, content string) ([]byte, error) {
	lines := splitLines(old)
	n := len(lines)
	if start > n || end > n {
		return nil, tool.Errorf(tool.CodeOutOfRange,
			"lines %d-%d are not in the file, which has %d lines; nothing was written", start, end, n)
	}
	noFinalNewline := end == n && !endsWithNewline(old)
	var b bytes.Buffer
	for _, l := range lines[:start-1] {
		b.Write(l)
	}
	b.WriteString(terminate(content, noFinalNewline))
	for _, l := range lines[end:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

// insertAt inserts content before line (1-based) of old; n+1 appends.
func insertAt(old []byte, line int, content string) ([]byte, error) {
	lines := splitLines(old)
	n := len(lines)
	if line > n+1 {
		return nil, tool.Errorf(tool.CodeOutOfRange,
			"line %d is not in the file, which has %d lines (use %d to add at the end); nothing was written", line, n, n+1)
	}
	if content == "" {
		return old, nil
	}
	var b bytes.Buffer
	for _, l := range lines[:line-1] {
		b.Write(l)
	}
	if line == n+1 && n > 0 && !endsWithNewline(old) {
		b.WriteByte('\n') // end the old last line first
		b.WriteString(terminate(content, true))
		return b.Bytes(), nil
	}
	b.WriteString(terminate(content, false))
	for _, l := range lines[line-1:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

// chownLike gives f the owner of old, when the process may.
func chownLike(f *os.File, old fs.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}

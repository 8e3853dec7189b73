package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"choir/agent/tool"
)

// Read is choir.fs.read: a text file of the workspace, whole or in part
// (head N lines, tail N lines, or a start_line..end_line range, 1-based and
// inclusive), holding file:<path> S. The content returned stops at a line
// boundary once it would pass the cap (truncated: true; end_line says where
// it stopped); a single line longer than the cap is cut. total_lines counts
// the whole file. Directories and binary files (a NUL byte in the first
// 8 KiB) are refused.
type Read struct {
	base
	cap int
}

var _ tool.Tool = (*Read)(nil)

const readParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
    "head": {"type": "integer", "minimum": 1, "description": "Return only the first N lines."},
    "tail": {"type": "integer", "minimum": 1, "description": "Return only the last N lines."},
    "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (inclusive)."},
    "line_numbers": {"type": "boolean", "description": "Prefix each line with its number and a tab."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func newRead(readCap int) *Read {
	return &Read{
		base: base{
			llm: tool.LLMTool{
				Name: "choir.fs.read",
				Description: "Read a text file in the workspace: all of it, the first or last N lines, " +
					"or a line range. Reports the file's total line count and whether the content was truncated.",
				Parameters: json.RawMessage(readParams),
			},
			rt: tool.Runtime{
				Timeout:    30 * time.Second,
				SideEffect: tool.SideEffectRead,
				Idempotent: true,
				Version:    "1",
				Exposure:   tool.ExposeBoth,
			},
		},
		cap: readCap,
	}
}

// Locks is file:<path> S.
func (t *Read) Locks(input json.RawMessage) ([]tool.LockReq, error) {
	return fileLocks(input, tool.Shared)
}

type readInput struct {
	Path        string `json:"path"`
	Head        int    `json:"head"`
	Tail        int    `json:"tail"`
	StartLine   int    `json:"start_line"`
	EndLine     int    `json:"end_line"`
	LineNumbers bool   `json:"line_numbers"`
}

// Execute reads the file.
func (t *Read) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in readInput
	if err := decode(input, &in); err != nil {
		return tool.Result{}, err
	}
	ranged := in.StartLine > 0 || in.EndLine > 0
	if (in.Head > 0 && in.Tail > 0) || ((in.Head > 0 || in.Tail > 0) && ranged) {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "give at most one of head, tail, or start_line/end_line")
	}
	if in.StartLine > 0 && in.EndLine > 0 && in.EndLine < in.StartLine {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "end_line %d is before start_line %d", in.EndLine, in.StartLine)
	}
	p, err := Confine(env.Workspace, in.Path)
	if err != nil {
		return tool.Result{}, err
	}
	f, size, err := openText(p)
	if err != nil {
		return tool.Result{}, err
	}
	defer f.Close()

	from, to := 1, 0 // to 0: through the end
	switch {
	case in.Head > 0:
		to = in.Head
	case in.Tail > 0:
		total, err := countLines(f)
		if err != nil {
			return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "read: %v", stripPath(err))
		}
		from = max(1, total-in.Tail+1)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "seek: %v", stripPath(err))
		}
	case ranged:
		from, to = max(1, in.StartLine), in.EndLine
	}
	out, err := readLines(f, size, from, to, t.cap, in.LineNumbers)
	if err != nil {
		return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "read: %v", stripPath(err))
	}
	if ranged && from > out.total && !(from == 1 && out.total == 0) {
		return tool.Result{}, tool.PathErrorf(tool.CodeOutOfRange, p.Rel,
			"start_line %d is past the end of the file, which has %d lines", from, out.total)
	}
	summary := fmt.Sprintf("%s: empty file", p.Rel)
	if out.first > 0 {
		summary = fmt.Sprintf("%s: lines %d-%d of %d", p.Rel, out.first, out.last, out.total)
	} else if out.total > 0 {
		summary = fmt.Sprintf("%s: no lines selected of %d", p.Rel, out.total)
	}
	if out.truncated {
		summary += fmt.Sprintf(" (truncated at %d bytes; read on from a later start_line)", t.cap)
	}
	return tool.Success(summary, map[string]any{
		"path":        p.Rel,
		"content":     string(out.content),
		"total_lines": out.total,
		"start_line":  out.first,
		"end_line":    out.last,
		"truncated":   out.truncated,
		"size":        size,
	}), nil
}

// openText opens a regular text file for reading, refusing what is missing,
// a directory, not a regular file, or binary.
func openText(p Path) (*os.File, int64, error) {
	f, err := os.Open(p.Abs)
	if err != nil {
		return nil, 0, fsError(p.Rel, "open", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeIO, p.Rel, "stat: %v", stripPath(err))
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeIsDirectory, p.Rel,
			"this is a directory; list it with choir.exec (ls) or search it with choir.fs.search")
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeIO, p.Rel, "not a regular file (%v)", fi.Mode().Type())
	}
	head := make([]byte, min(sniffLen, fi.Size()+1))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeIO, p.Rel, "read: %v", stripPath(err))
	}
	if isBinary(head[:n]) {
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeBinaryFile, p.Rel,
			"this looks like a binary file (it has NUL bytes) and cannot be read as text; inspect it with choir.exec (e.g. file, xxd | head)")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, tool.PathErrorf(tool.CodeIO, p.Rel, "seek: %v", stripPath(err))
	}
	return f, fi.Size(), nil
}

// countLines counts lines: newlines, plus one for a last line without one.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

type lines struct {
	content     []byte
	first, last int // the lines returned, 0 when none
	total       int
	truncated   bool
}

// readLines returns lines from..to (to 0: through the end) of r, at most
// limit bytes of them, and counts every line of r. size is r's expected
// length, to size the buffer.
func readLines(r io.Reader, size int64, from, to, limit int, numbers bool) (lines, error) {
	var out lines
	br := bufio.NewReaderSize(r, int(min(max(size+1, 4<<10), 64<<10)))
	lineNo, atStart, full := 1, true, false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if lineNo >= from && (to == 0 || lineNo <= to) {
				piece := chunk
				if atStart && numbers {
					piece = append(strconv.AppendInt(nil, int64(lineNo), 10), '\t')
					piece = append(piece, chunk...)
				}
				room := limit - len(out.content)
				switch {
				case full:
					out.truncated = true
				case atStart && len(piece) > room && len(out.content) > 0:
					full, out.truncated = true, true // stop at the line boundary
				default:
					k := min(room, len(piece))
					out.content = append(out.content, piece[:k]...)
					if out.first == 0 {
						out.first = lineNo
					}
					out.last = lineNo
					if k < len(piece) {
						full, out.truncated = true, true
					}
				}
			}
			if chunk[len(chunk)-1] == '\n' {
				lineNo++
				atStart = true
			} else {
				atStart = false
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			out.total = lineNo - 1
			if !atStart {
				out.total = lineNo
			}
			return out, nil
		default:
			return out, err
		}
	}
}

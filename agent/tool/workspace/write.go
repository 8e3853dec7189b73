package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"choir/agent/tool"
)

// Write is choir.fs.write: one patch operation on a file of the workspace,
// holding file:<path> X.
//
//	create          new file with content; fails if it exists unless overwrite is true;
//	                creates missing parent directories
//	overwrite       replace the content of an existing file
//	append          add content at the end of an existing file
//	replace_lines   replace lines start_line..end_line (1-based, inclusive) with content;
//	                empty content deletes them
//	insert_at_line  insert content before line `line`; total_lines+1 appends
//
// Line operations work on text files up to MaxEditSize and check their line
// numbers against the current file before anything is written; inserted
// content that lacks a final newline gets one, except as the last line of a
// file that has none. Every operation writes a temporary file in the target's
// directory and renames it over the target, so the file is either wholly old
// or wholly new; an existing file keeps its mode (and, when choir-agent may,
// its owner). A failed operation leaves no temporary file behind.
type Write struct {
	base
}

var _ tool.Tool = (*Write)(nil)

// MaxEditSize bounds the files choir.fs.write changes in place.
const MaxEditSize = 64 << 20

const writeParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
    "op": {"type": "string", "enum": ["create", "overwrite", "append", "replace_lines", "insert_at_line"],
      "description": "create: new file; overwrite: replace all content; append: add at the end; replace_lines: replace start_line..end_line; insert_at_line: insert before line."},
    "content": {"type": "string", "description": "The text to write, append, insert, or put in place of the lines."},
    "overwrite": {"type": "boolean", "description": "create only: replace the file if it exists."},
    "start_line": {"type": "integer", "minimum": 1, "description": "replace_lines: first line replaced (1-based)."},
    "end_line": {"type": "integer", "minimum": 1, "description": "replace_lines: last line replaced (inclusive)."},
    "line": {"type": "integer", "minimum": 1, "description": "insert_at_line: the new content goes before this line; total_lines+1 appends."}
  },
  "required": ["path", "op", "content"],
  "additionalProperties": false
}`

func newWrite() *Write {
	return &Write{base{
		llm: tool.LLMTool{
			Name: "choir.fs.write",
			Description: "Change a file in the workspace with one operation: create, overwrite, append, " +
				"replace_lines (a line range) or insert_at_line. Line numbers are 1-based, as choir.fs.read reports them.",
			Parameters: json.RawMessage(writeParams),
		},
		rt: tool.Runtime{
			Timeout:    30 * time.Second,
			SideEffect: tool.SideEffectWrite,
			Version:    "1",
			Exposure:   tool.ExposeBoth,
		},
	}}
}

// Locks is file:<path> X.
func (t *Write) Locks(input json.RawMessage) ([]tool.LockReq, error) {
	return fileLocks(input, tool.Exclusive)
}

type writeInput struct {
	Path      string `json:"path"`
	Op        string `json:"op"`
	Content   string `json:"content"`
	Overwrite bool   `json:"overwrite"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Line      int    `json:"line"`
}

// check refuses parameters that do not belong to the operation.
func (in *writeInput) check() error {
	bad := func(format string, args ...any) error {
		return tool.Errorf(tool.CodeInvalidInput, format, args...)
	}
	if in.Overwrite && in.Op != "create" {
		return bad("overwrite is only for op create")
	}
	if in.Op != "replace_lines" && (in.StartLine > 0 || in.EndLine > 0) {
		return bad("start_line and end_line are only for op replace_lines")
	}
	if in.Op != "insert_at_line" && in.Line > 0 {
		return bad("line is only for op insert_at_line")
	}
	switch in.Op {
	case "replace_lines":
		if in.StartLine == 0 || in.EndLine == 0 {
			return bad("replace_lines needs start_line and end_line")
		}
		if in.EndLine < in.StartLine {
			return bad("end_line %d is before start_line %d", in.EndLine, in.StartLine)
		}
	case "insert_at_line":
		if in.Line == 0 {
			return bad("insert_at_line needs line")
		}
	}
	return nil
}

// Execute applies the operation.
func (t *Write) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in writeInput
	if err := decode(input, &in); err != nil {
		return tool.Result{}, err
	}
	if err := in.check(); err != nil {
		return tool.Result{}, err
	}
	p, err := Confine(env.Workspace, in.Path)
	if err != nil {
		return tool.Result{}, err
	}
	if p.Rel == "." {
		return tool.Result{}, tool.PathErrorf(tool.CodeIsDirectory, p.Rel, "the workspace root is a directory, not a file")
	}
	fi, err := os.Stat(p.Abs)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return tool.Result{}, fsError(p.Rel, "stat", err)
	case exists && fi.IsDir():
		return tool.Result{}, tool.PathErrorf(tool.CodeIsDirectory, p.Rel, "this is a directory, not a file")
	case exists && !fi.Mode().IsRegular():
		return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "not a regular file (%v)", fi.Mode().Type())
	case in.Op == "create" && exists && !in.Overwrite:
		return tool.Result{}, tool.PathErrorf(tool.CodeExists, p.Rel,
			"the file exists; set overwrite: true to replace it, or use op overwrite, append or a line operation")
	case in.Op != "create" && !exists:
		return tool.Result{}, tool.PathErrorf(tool.CodeNotFound, p.Rel, "no such file; use op create to make it")
	}

	var old []byte
	if exists && in.Op != "create" && in.Op != "overwrite" {
		if fi.Size() > MaxEditSize {
			return tool.Result{}, tool.PathErrorf(tool.CodeTooLarge, p.Rel,
				"the file has %d bytes, more than the %d this tool edits; use choir.exec", fi.Size(), MaxEditSize)
		}
		if old, err = os.ReadFile(p.Abs); err != nil {
			return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "read: %v", stripPath(err))
		}
		if in.Op != "append" && isBinary(old[:min(len(old), sniffLen)]) {
			return tool.Result{}, tool.PathErrorf(tool.CodeBinaryFile, p.Rel, "line operations need a text file; this one has NUL bytes")
		}
	}
	var data []byte
	var summary string
	switch in.Op {
	case "create", "overwrite":
		data = []byte(in.Content)
		summary = fmt.Sprintf("wrote %d bytes to %s", len(data), p.Rel)
		if in.Op == "create" && !exists {
			summary = fmt.Sprintf("created %s (%d bytes)", p.Rel, len(data))
		}
	case "append":
		data = append(old, in.Content...)
		summary = fmt.Sprintf("appended %d bytes to %s", len(in.Content), p.Rel)
	case "replace_lines":
		if data, err = replaceLines(old, in.StartLine, in.EndLine, in.Content); err != nil {
			return tool.Result{}, withPath(err, p.Rel)
		}
		summary = fmt.Sprintf("replaced lines %d-%d of %s", in.StartLine, in.EndLine, p.Rel)
	case "insert_at_line":
		if data, err = insertAt(old, in.Line, in.Content); err != nil {
			return tool.Result{}, withPath(err, p.Rel)
		}
		summary = fmt.Sprintf("inserted before line %d of %s", in.Line, p.Rel)
	}

	if !exists {
		if err := os.MkdirAll(filepath.Dir(p.Abs), 0o755); err != nil {
			return tool.Result{}, fsError(p.Rel, "create parent directories", err)
		}
	}
	if err := writeAtomic(p.Abs, data, fi); err != nil {
		return tool.Result{}, tool.PathErrorf(tool.CodeIO, p.Rel, "write: %v", stripPath(err))
	}
	total := len(splitLines(data))
	return tool.Success(fmt.Sprintf("%s (now %d lines)", summary, total), map[string]any{
		"path":        p.Rel,
		"op":          in.Op,
		"created":     !exists,
		"size":        len(data),
		"total_lines": total,
	}), nil
}

func withPath(err error, rel string) error {
	var te *tool.Error
	if errors.As(err, &te) {
		te.Path = rel
	}
	return err
}

// writeAtomic writes data to a temporary file beside target and renames it
// over target. old is the target's FileInfo, nil for a new file (mode 0644).
func writeAtomic(target string, data []byte, old fs.FileInfo) (err error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".choir-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	mode := fs.FileMode(0o644)
	if old != nil {
		mode = old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		chownLike(f, old) // best effort: keeps the owner when choir-agent runs as root
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, target)
}

package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"time"
	"unicode/utf8"

	"choir/agent/tool"
)

// Search is choir.fs.search: lines matching a regular expression (or a fixed
// string) in a file or under a directory of the workspace, holding file:<path>
// S on the target (workspace S for the root; a directory key covers the files
// under it in the lock manager).
//
// It runs ripgrep (`rg --json`) when rg is installed, else a built-in walker;
// both give the same result: matches in path order (each directory's entries
// by name) as {path, line, text}, at most max_results of them (truncated:
// true when there were more). Both search hidden files, ignore no
// .gitignore, skip .git directories, do not follow symlinks below the
// target, and skip binary files (a NUL byte). The pattern is checked with Go's
// regexp (RE2 syntax, which ripgrep's default engine shares for everything
// but exotic classes) so a bad pattern gets the same message either way.
type Search struct {
	base
	rg string // "" uses the walker
}

var _ tool.Tool = (*Search)(nil)

// Search limits.
const (
	DefaultMaxResults = 100
	MaxResults        = 1000
	// MaxMatchText bounds the text of one matching line.
	MaxMatchText = 400
)

const searchParams = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Regular expression (RE2 syntax), or literal text with fixed_strings."},
    "path": {"type": "string", "minLength": 1, "description": "File or directory to search, relative to the workspace root (default: the whole workspace)."},
    "fixed_strings": {"type": "boolean", "description": "Treat pattern as literal text."},
    "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most matching lines to return (default 100)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

func newSearch(rg string) *Search {
	return &Search{
		base: base{
			llm: tool.LLMTool{
				Name: "choir.fs.search",
				Description: "Search files in the workspace for lines matching a regular expression or literal text " +
					"(ripgrep). Returns path, line number and text of each match; skips .git and binary files.",
				Parameters: json.RawMessage(searchParams),
			},
			rt: tool.Runtime{
				Timeout:    60 * time.Second,
				SideEffect: tool.SideEffectRead,
				Idempotent: true,
				Version:    "1",
				Exposure:   tool.ExposeBoth,
			},
		},
		rg: rg,
	}
}

// Locks is file:<path> S on the target, workspace S for the root.
func (t *Search) Locks(input json.RawMessage) ([]tool.LockReq, error) {
	return fileLocks(input, tool.Shared)
}

// Match is one matching line.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type searchInput struct {
	Pattern      string `json:"pattern"`
	Path         string `json:"path"`
	FixedStrings bool   `json:"fixed_strings"`
	IgnoreCase   bool   `json:"ignore_case"`
	MaxResults   int    `json:"max_results"`
}

// query is a checked search.
type query struct {
	in     searchInput
	target Path
	isDir  bool
	re     *regexp.Regexp
	max    int
}

// Execute searches.
func (t *Search) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	q, err := prepareSearch(input, env.Workspace)
	if err != nil {
		return tool.Result{}, err
	}
	var matches []Match
	if t.rg != "" {
		matches, err = ripgrep(ctx, t.rg, env.Workspace, q)
	} else {
		matches, err = walk(ctx, q)
	}
	if err != nil {
		return tool.Result{}, err
	}
	truncated := len(matches) > q.max
	if truncated {
		matches = matches[:q.max]
	}
	if matches == nil {
		matches = []Match{}
	}
	summary := fmt.Sprintf("%d matching lines in %s", len(matches), q.target.Rel)
	if truncated {
		summary = fmt.Sprintf("first %d matching lines in %s (more exist; narrow the path or pattern)", q.max, q.target.Rel)
	}
	return tool.Success(summary, map[string]any{
		"path":      q.target.Rel,
		"matches":   matches,
		"count":     len(matches),
		"truncated": truncated,
	}), nil
}

func prepareSearch(input json.RawMessage, root string) (*query, error) {
	q := &query{}
	if err := decode(input, &q.in); err != nil {
		return nil, err
	}
	if q.in.Path == "" {
		q.in.Path = "."
	}
	q.max = q.in.MaxResults
	if q.max <= 0 {
		q.max = DefaultMaxResults
	}
	expr := q.in.Pattern
	if q.in.FixedStrings {
		expr = regexp.QuoteMeta(expr)
	}
	if q.in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, tool.Errorf(tool.CodeInvalidInput, "bad pattern: %v (set fixed_strings for literal text)", err)
	}
	q.re = re
	if q.target, err = Confine(root, q.in.Path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(q.target.Abs)
	switch {
	case err != nil:
		return nil, fsError(q.target.Rel, "stat", err)
	case fi.IsDir():
		q.isDir = true
	case !fi.Mode().IsRegular():
		return nil, tool.PathErrorf(tool.CodeIO, q.target.Rel, "not a regular file (%v)", fi.Mode().Type())
	default:
		f, _, err := openText(q.target) // refuses a binary file
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return q, nil
}

// matchText trims a matching line's end of line and bounds its length at a
// UTF-8 boundary.
func matchText(line []byte) string {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if len(line) <= MaxMatchText {
		return string(line)
	}
	cut := MaxMatchText
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + " [...]"
}

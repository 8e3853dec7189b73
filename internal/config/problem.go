package config

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a file: where (file and JSON path), the
// offending value as it appears in the file, and what to do about it.
type Problem struct {
	File    string // "config.json" or "secrets.json"
	Path    string // JSON path, e.g. agents.agent-1.defaults.llm; empty for the whole file
	Value   string // the offending value, as JSON, shortened; empty when absent
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Path != "" {
		b.WriteString(": ")
		b.WriteString(p.Path)
	}
	if p.Value != "" {
		b.WriteString(" = ")
		b.WriteString(p.Value)
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem found in one pass; it is an error when non-empty.
type Problems []Problem

func (ps Problems) Error() string {
	if len(ps) == 1 {
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Err returns nil when there are no problems, so callers can return it directly.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

func (ps *Problems) add(file, path, value, format string, args ...any) {
	*ps = append(*ps, Problem{File: file, Path: path, Value: value, Message: fmt.Sprintf(format, args...)})
}

func (ps Problems) sorted() Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Path < ps[j].Path
	})
	return ps
}

// quote renders a string value the way it appears in JSON.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

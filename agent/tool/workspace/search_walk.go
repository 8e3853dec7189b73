package workspace

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// maxLine bounds a line the walker reads; a file with a longer line is
// searched up to it.
const maxLine = 16 << 20

// walk is the built-in search: it stops after q.max+1 matches, so the
// caller can tell there were more.
func walk(ctx context.Context, q *query) ([]Match, error) {
	var matches []Match
	if !q.isDir {
		return searchFile(q.target.Abs, q.target.Rel, q, nil), nil
	}
	err := filepath.WalkDir(q.target.Abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, as rg does
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if p != q.target.Abs && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || d.Name() == ".git" {
			return nil // symlinks are not followed; a .git file is git's, as a .git directory is
		}
		rel, err := filepath.Rel(q.target.Abs, p)
		if err != nil {
			return nil
		}
		matches = searchFile(p, path.Join(q.target.Rel, filepath.ToSlash(rel)), q, matches)
		if len(matches) > q.max {
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return matches, nil
}

// searchFile appends the matches of one file to matches. A file with a NUL
// byte is binary and contributes nothing.
func searchFile(abs, rel string, q *query, matches []Match) []Match {
	f, err := os.Open(abs)
	if err != nil {
		return matches
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var found []Match
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if bytes.IndexByte(line, 0) >= 0 {
			return matches
		}
		if q.re.Match(line) {
			found = append(found, Match{Path: rel, Line: n, Text: matchText(line)})
			if len(matches)+len(found) > q.max {
				break
			}
		}
	}
	return append(matches, found...)
}

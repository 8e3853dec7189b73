package workspace

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"path"
	"strings"

	"choir/agent/sandbox"
	"choir/agent/tool"
	"choir/agent/tool/internal/proc"
)

// rgText is ripgrep's arbitrary data: UTF-8 text, or base64 bytes when the
// data is not valid UTF-8.
type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) raw() []byte {
	if t.Text != nil {
		return []byte(*t.Text)
	}
	b, _ := base64.StdEncoding.DecodeString(t.Bytes)
	return b
}

type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// ripgrep runs rg --json in the workspace and reads its matches as they come,
// stopping it after q.max+1. The flags make it search what the walker
// searches: hidden files, no ignore files, no .git, no config file, sorted by
// path (which also makes it single-threaded and deterministic).
func ripgrep(ctx context.Context, rg, root string, q *query) ([]Match, error) {
	args := []string{"--json", "--no-config", "--hidden", "--no-ignore", "--sort", "path", "--glob", "!.git"}
	if q.in.FixedStrings {
		args = append(args, "--fixed-strings")
	}
	if q.in.IgnoreCase {
		args = append(args, "--ignore-case")
	}
	args = append(args, "--regexp", q.in.Pattern, "--", q.target.Rel)

	rgCtx, stop := context.WithCancel(ctx)
	defer stop()
	end := sandbox.Begin()
	defer end()
	cmd := sandbox.Command(rgCtx, rg, args...)
	cmd.Dir = root
	stderr := proc.NewCapture(4 << 10)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, tool.Errorf(tool.CodeInternal, "start rg: %v", err)
	}
	var matches []Match
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 4*maxLine)
	for sc.Scan() {
		var m rgMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Type != "match" {
			continue
		}
		matches = append(matches, Match{
			Path: path.Clean(string(m.Data.Path.raw())),
			Line: m.Data.LineNumber,
			Text: matchText(m.Data.Lines.raw()),
		})
		if len(matches) > q.max {
			break
		}
	}
	stopped := len(matches) > q.max || sc.Err() != nil // a line past the scanner's limit ends the search
	if stopped {
		stop()
	}
	err = cmd.Wait()
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	var ee *exec.ExitError
	switch {
	case err == nil, stopped:
	case errors.As(err, &ee) && ee.ExitCode() == 1: // no match
	case errors.As(err, &ee) && ee.ExitCode() == 2 && len(matches) > 0:
		// some files could not be read; the matches found stand
	default:
		msg := strings.TrimSpace(stderr.Output().Text)
		if msg == "" {
			msg = err.Error()
		}
		return nil, tool.PathErrorf(tool.CodeIO, q.target.Rel, "rg failed: %s", msg)
	}
	return matches, nil
}

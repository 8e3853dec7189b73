package signoff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"choir/choird/headless"
)

// Type is the request type of a run's commit approval.
const Type = "run_commit"

// ID is the approval id of run runID's commit of patch (its diff hash):
// "run-<run id>-<12 hex of the patch>", 31 bytes, so choird finds the
// approval again from the run alone after a restart, and a later commit
// request for another patch is another approval.
func ID(runID, patch string) string {
	return "run-" + runID + "-" + patch[:min(12, len(patch))]
}

// Payload is what a run's commit approval carries: what the person
// decides on. It names receipts and objects, never a verifier's output.
type Payload struct {
	Run         string    `json:"run"`
	WorkItem    string    `json:"work_item"`
	Description string    `json:"description"` // the work item's, cut
	Why         string    `json:"why"`         // "high risk", or the doc gates the patch passes
	Patch       string    `json:"patch"`       // the diff hash the verifiers passed (an object)
	Files       []File    `json:"files"`
	Added       int       `json:"added"`
	Deleted     int       `json:"deleted"`
	Verifiers   []Verdict `json:"verifiers"`
	Request     string    `json:"request"`  // the CommitRequest receipt
	Receipts    string    `json:"receipts"` // the run's receipts when asked: "<run>#1-<n>"
}

// File is one file of the patch with its diff stat.
type File struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
}

// Verdict is a verifier's latest attestation on the patch: its outcome
// and one-line brief (verify.Report.Brief: counts and times, no output).
type Verdict struct {
	Verifier string `json:"verifier"`
	Passed   bool   `json:"passed"`
	Brief    string `json:"brief,omitempty"`
	Receipt  string `json:"receipt"`
}

// payload gathers the approval's payload from the run's work item, its
// commit check and receipts, and the patch's bytes (nil: the files of its
// PatchReceipt without counts).
func payload(r headless.Run, item headless.WorkItem, check headless.CommitCheck, rs []headless.Receipt, patch []byte) Payload {
	p := Payload{Run: r.ID, WorkItem: item.ID, Description: clip(firstLine(item.Description), 120), Patch: check.Patch,
		Request: check.Request, Files: []File{}, Verifiers: []Verdict{}}
	p.Why = "high risk"
	if item.Risk != headless.RiskHigh {
		p.Why = strings.Join(check.Gates, "; ")
	}
	if n := len(rs); n > 0 {
		p.Receipts = fmt.Sprintf("%s#1-%d", r.ID, rs[n-1].Seq)
	}
	latest := map[string]int{}
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindPatchReceipt:
			var b struct {
				Hash  string   `json:"hash"`
				Files []string `json:"files"`
			}
			if json.Unmarshal(rec.Body, &b) == nil && b.Hash == check.Patch && patch == nil {
				p.Files = p.Files[:0]
				for _, f := range b.Files {
					p.Files = append(p.Files, File{Path: f})
				}
			}
			clear(latest)
			p.Verifiers = p.Verifiers[:0]
		case headless.KindVerifierResults:
			var a headless.Attestation
			if json.Unmarshal(rec.Body, &a) != nil || (a.Patch != "" && a.Patch != check.Patch) {
				continue
			}
			v := Verdict{Verifier: a.Verifier, Passed: a.Passed, Brief: clip(a.Summary, 200), Receipt: rec.Ref()}
			if i, ok := latest[a.Verifier]; ok {
				p.Verifiers[i] = v
				continue
			}
			latest[a.Verifier] = len(p.Verifiers)
			p.Verifiers = append(p.Verifiers, v)
		}
	}
	if patch != nil {
		p.Files = DiffStat(patch)
	}
	for _, f := range p.Files {
		p.Added += f.Added
		p.Deleted += f.Deleted
	}
	return p
}

// maxFilesShown bounds the files a summary names; the payload has all.
const maxFilesShown = 8

// Summary is the approval's one line: which run of which work item, why
// it waits, what the patch touches with its diff stat, the verifiers'
// verdicts and the receipts.
func (p Payload) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit run %s of work item %s", p.Run, p.WorkItem)
	if p.Description != "" {
		fmt.Fprintf(&b, " (%s)", p.Description)
	}
	if p.Why != "" {
		fmt.Fprintf(&b, ", which needs a human: %s", p.Why)
	}
	fmt.Fprintf(&b, ". Patch %s: %d file", p.Patch[:min(12, len(p.Patch))], len(p.Files))
	if len(p.Files) != 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, ", +%d -%d", p.Added, p.Deleted)
	var files []string
	for i, f := range p.Files {
		if i == maxFilesShown {
			files = append(files, fmt.Sprintf("and %d more", len(p.Files)-i))
			break
		}
		switch {
		case f.Binary:
			files = append(files, f.Path+" (binary)")
		default:
			files = append(files, fmt.Sprintf("%s +%d -%d", f.Path, f.Added, f.Deleted))
		}
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(files, ", "))
	}
	var vs []string
	for _, v := range p.Verifiers {
		verdict := "failed"
		if v.Passed {
			verdict = "passed"
		}
		vs = append(vs, fmt.Sprintf("%s %s (%s)", v.Verifier, verdict, v.Receipt))
	}
	if len(vs) > 0 {
		fmt.Fprintf(&b, ". Verifiers: %s", strings.Join(vs, ", "))
	}
	if p.Receipts != "" {
		fmt.Fprintf(&b, ". Receipts %s (choirctl run receipts %s)", p.Receipts, p.Run)
	}
	b.WriteString(".")
	return b.String()
}

// DiffStat counts the lines each file of a git diff adds and deletes (as
// `git diff --numstat` does), in the diff's order; a binary file's are 0.
func DiffStat(patch []byte) []File {
	out := []File{}
	var cur *File
	inHunk := false
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("diff --git ")):
			out = append(out, File{Path: diffPath(string(line[len("diff --git "):]))})
			cur, inHunk = &out[len(out)-1], false
		case cur == nil:
		case bytes.HasPrefix(line, []byte("@@")):
			inHunk = true
		case !inHunk && (bytes.HasPrefix(line, []byte("Binary files ")) || bytes.Equal(line, []byte("GIT binary patch"))):
			cur.Binary = true
		case inHunk && len(line) > 0 && line[0] == '+':
			cur.Added++
		case inHunk && len(line) > 0 && line[0] == '-':
			cur.Deleted++
		}
	}
	return out
}

// diffPath is the path of "a/<p> b/<p>" (a diff without renames names the
// same path twice).
func diffPath(s string) string {
	if n := len(s); n > 5 && (n-5)%2 == 0 {
		l := (n - 5) / 2
		if a, b := s[:l+2], s[l+3:]; strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return a[2:]
		}
	}
	return strings.TrimPrefix(s, "a/")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

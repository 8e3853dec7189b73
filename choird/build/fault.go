package build

import (
	"fmt"
	"strings"
)

// Fault is one thing wrong with a repo's content, found before any image
// is built.
type Fault struct {
	Repo    string `json:"repo"`           // "global repo (file:///srv/choir-global.git)"
	File    string `json:"file,omitempty"` // path inside the repo: "tools/acme.git.commit.json"
	Path    string `json:"path,omitempty"` // JSON pointer inside File, when known
	Message string `json:"message"`
}

func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Repo)
	if f.File != "" {
		b.WriteString(": " + f.File)
	}
	if f.Path != "" {
		b.WriteString(": " + f.Path)
	}
	b.WriteString(": " + f.Message)
	return b.String()
}

// InvalidError lists every fault in the repos an agent is built from. The
// build stops before any image is built, and nothing is changed.
type InvalidError struct {
	Faults []Fault
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	if len(e.Faults) == 1 {
		b.WriteString("invalid repo content: ")
		b.WriteString(e.Faults[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "invalid repo content (%d problems):", len(e.Faults))
	for _, f := range e.Faults {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

package lock

import (
	"fmt"
	"strings"
)

// An Owner is the lane that holds or waits for locks: Edge or core:<job-name>.
type Owner string

// Edge is the user-facing lane, the only owner allowed dirty reads.
const Edge Owner = "edge"

const corePrefix = "core:"

// maxJob bounds the length of a core job name.
const maxJob = 64

// Core returns the owner core:<job> of a core job. A job name is 1 to 64
// letters, digits, '-', '_' or '.', such as "refactor-auth".
func Core(job string) (Owner, error) {
	if err := checkJob(job); err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidOwner, corePrefix+job, err)
	}
	return Owner(corePrefix + job), nil
}

// ParseOwner checks s and returns it as an Owner.
func ParseOwner(s string) (Owner, error) {
	if Owner(s) == Edge {
		return Edge, nil
	}
	job, ok := strings.CutPrefix(s, corePrefix)
	if !ok {
		return "", fmt.Errorf("%w %q: want %q or %q", ErrInvalidOwner, s, Edge, corePrefix+"<job-name>")
	}
	if err := checkJob(job); err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidOwner, s, err)
	}
	return Owner(s), nil
}

// IsEdge reports whether o is the edge lane.
func (o Owner) IsEdge() bool { return o == Edge }

// IsCore reports whether o is a core job.
func (o Owner) IsCore() bool { return strings.HasPrefix(string(o), corePrefix) }

// Job returns the job name of a core owner, and "" for the edge.
func (o Owner) Job() string {
	job, ok := strings.CutPrefix(string(o), corePrefix)
	if !ok {
		return ""
	}
	return job
}

func checkJob(job string) error {
	if job == "" {
		return fmt.Errorf("empty job name")
	}
	if len(job) > maxJob {
		return fmt.Errorf("job name longer than %d bytes", maxJob)
	}
	for _, c := range job {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '_' || c == '.':
		default:
			return fmt.Errorf("job name has %q; use letters, digits, '-', '_' or '.'", c)
		}
	}
	return nil
}

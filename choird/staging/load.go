package staging

import (
	"context"
	"fmt"
	"strings"
	"time"

	"choir/choird/build"
	"choir/internal/config"
)

// Checker checks an agent's repos as a build would, and reads what an
// image holds (build.Builder).
type Checker interface {
	Check(ctx context.Context, cfg *config.Config, agentID string, progress func(string)) (*build.Content, error)
	ImageContent(ctx context.Context, agentID, image string) (*build.Content, error)
}

var _ Checker = (*build.Builder)(nil)

// Snapshot is .choir.d/ read, validated and checked as one: what `config
// load` stages.
type Snapshot struct {
	Loaded *config.Loaded
	// Repos is, per agent, what its image would be built from now.
	Repos    map[string]*build.Content
	Warnings []string
	At       time.Time
}

// Load reads config.json and secrets.json, then fetches and checks the
// global repo and every agent's repo against the new config. Any problem
// refuses the whole snapshot: the error lists every one of them. A repo
// that cannot be fetched but has a clone is a warning (the clone may be
// stale), not a problem.
func Load(ctx context.Context, home config.Home, chk Checker, progress func(string)) (*Snapshot, error) {
	l, err := config.Load(home)
	if err != nil {
		return nil, fmt.Errorf("%s is invalid; nothing is staged:\n%w", home.ConfigPath(), err)
	}
	s := &Snapshot{Loaded: l, Repos: map[string]*build.Content{}, At: time.Now()}
	var problems []string
	seen := map[string]bool{}
	for _, id := range config.SortedNames(l.Config.Agents) {
		c, err := chk.Check(ctx, l.Config, id, progress)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			problems = append(problems, fmt.Sprintf("agent %s: %v", id, err))
			continue
		}
		for _, w := range c.Warnings {
			if !seen[w] { // the global repo's warnings come once per agent
				seen[w] = true
				s.Warnings = append(s.Warnings, w)
			}
		}
		s.Repos[id] = c
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%d problem(s); nothing is staged:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	if w := config.UnpricedWarning(l.Config); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	return s, nil
}

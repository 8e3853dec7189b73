package mood

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"choir/internal/config"
)

// Apply returns p changed by the operator's override o (config.json's
// headless.moods.<MOOD>): absent fields keep p's values, present lists
// replace p's. It does not validate; Resolve does.
func Apply(p Profile, o config.MoodOverride) Profile {
	p = p.Clone()
	set := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	if o.Tools != nil {
		p.Tools = slices.Clone(o.Tools)
	}
	set(&p.Network, o.Network)
	set(&p.PrivateData, o.PrivateData)
	set(&p.Credentials, o.Credentials)
	set(&p.WorkspaceWritable, o.WorkspaceWritable)
	set(&p.MayCommit, o.MayCommit)
	set(&p.WorkItemVerifiers, o.WorkItemVerifiers)
	if o.Verifiers != nil {
		p.Verifiers = slices.Clone(o.Verifiers)
	}
	if o.Allow != nil {
		p.Allow = config.Entries(o.Allow)
	}
	if b := o.Budgets; b != nil {
		if b.Tokens != nil {
			p.Budgets.Tokens = *b.Tokens
		}
		if b.ToolCalls != nil {
			p.Budgets.ToolCalls = *b.ToolCalls
		}
		if b.WallTimeS != nil {
			p.Budgets.WallTime = time.Duration(*b.WallTimeS) * time.Second
		}
	}
	return p
}

// Resolve returns the profiles in effect: the built-ins with the
// operator's overrides (config.Config.Headless; nil means none) applied,
// every one validated. The error names each problem at its config.json
// path (headless.moods.<MOOD>.<field>); a run must not start on a
// profile Resolve refused.
func Resolve(h *config.Headless) (Set, error) {
	set := Builtins()
	var errs []error
	var overrides map[string]config.MoodOverride
	if h != nil {
		overrides = h.Moods
	}
	for name := range overrides {
		if _, ok := set[Mood(name)]; !ok {
			errs = append(errs, fmt.Errorf("config.json: headless.moods.%s: unknown mood; want one of %s", name, names()))
		}
	}
	for _, m := range All() {
		p := set[m]
		if o, ok := overrides[string(m)]; ok {
			p = Apply(p, o)
		}
		if err := Validate(p); err != nil {
			errs = append(errs, atPath(err))
		}
		set[m] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// pathError puts a profile problem at its config.json path.
type pathError struct{ p error }

func (e pathError) Error() string {
	var pr Problem
	var zp zoneProblem
	switch {
	case errors.As(e.p, &zp):
		pr = zp.Problem
	case errors.As(e.p, &pr):
	default:
		return e.p.Error()
	}
	path := "headless.moods." + string(pr.Mood)
	if pr.Field != "" {
		path += "." + pr.Field
	}
	return fmt.Sprintf("config.json: %s: %s", path, pr.Msg)
}

func (e pathError) Unwrap() error { return e.p }

// atPath maps each problem of a joined Validate error to a pathError.
func atPath(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return pathError{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, pathError{e})
	}
	return errors.Join(out...)
}

// String renders the profile in one line for logs and receipts.
func (p Profile) String() string {
	c := p.Container()
	return fmt.Sprintf("%s tools=[%s] network=%s workspace=%s credentials=%t commit=%t tokens=%d tool_calls=%d wall=%s",
		p.Mood, strings.Join(p.Tools, ","), c.NetworkMode, orNone(c.Workspace), p.Credentials, p.MayCommit,
		p.Budgets.Tokens, p.Budgets.ToolCalls, p.Budgets.WallTime)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

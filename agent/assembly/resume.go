package assembly

import (
	"fmt"
	"strings"

	"choir/agent/arbiter"
	"choir/agent/lane"
)

// resume rehydrates the arbiter and the lanes of a resumed session (§13.2)
// from what the session read at INIT_HELLO, before they run, and returns
// what to tell the user ("" for a fresh session).
func (rt *Runtime) resume(arb *arbiter.Arbiter, ln *lane.Lane) (string, error) {
	rec := rt.sess.Recovered()
	if rec == nil {
		return "", nil
	}
	intr, err := arb.Restore(rec.Base, rec.BaseHash, rec.Events)
	if err != nil {
		return "", fmt.Errorf("resume the session: %w", err)
	}
	got, err := ln.Resume(lane.Resume{Snapshot: rec.Snapshot, SnapshotRev: rec.SnapshotRev, Events: arb.Events(0)})
	if err != nil {
		return "", fmt.Errorf("resume the session: %w", err)
	}
	rt.log.Info("session resumed", "rev", rec.Head.Rev, "resumes", rec.Resumes, "jobs", strings.Join(got.Jobs, ","),
		"turn", got.Turn, "interrupted", len(intr), "unanswered", got.Unanswered)
	return resumeNotice(rec.Head.Rev, got, intr), nil
}

// resumeNotice tells the user what a resumed session goes on with.
func resumeNotice(rev int64, got lane.Resumed, intr []arbiter.Interrupted) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I was restarted and resumed this session where choird last saved it (event %d).", rev)
	var on []string
	if got.Turn {
		on = append(on, "your last message")
	}
	if len(got.Jobs) > 0 {
		on = append(on, "core jobs "+strings.Join(got.Jobs, ", "))
	}
	if len(got.Skills) > 0 {
		on = append(on, "skills "+strings.Join(got.Skills, ", "))
	}
	if len(on) > 0 {
		fmt.Fprintf(&b, " Going on with %s.", strings.Join(on, "; "))
	}
	var ran []string
	for _, i := range intr {
		if i.Ran {
			where := "edge"
			if i.Job != "" {
				where = i.Job
			}
			ran = append(ran, fmt.Sprintf("%s (%s)", i.Tool, where))
		}
	}
	if len(ran) > 0 {
		fmt.Fprintf(&b, " Interrupted while running, and not run again: %s; its effect may be partial.", strings.Join(ran, ", "))
	}
	if n := len(intr) - len(ran) + got.Unanswered; n > 0 {
		fmt.Fprintf(&b, " %d tool call(s) that had not started were not run.", n)
	}
	b.WriteString(" Anything said after that point was lost: repeat it if I do not answer it. To start over instead: choirctl agent start --fresh.")
	return b.String()
}

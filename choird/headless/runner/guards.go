package runner

import (
	"context"
	"encoding/json"
	"strings"

	"choir/choird/headless"
	"choir/choird/headless/mood"
)

// guardFacts completes the facts the mood guards decide on at a run's end
// with those of seed 002 §4 read from the state and the work (rs are the
// run's receipts): the hyperthesis magnitude of the agent's state vector,
// and the privilege proximity of the work item and of the run's latest
// patch. A PARANOID run of the work item in history means the proximity
// was looked at already (Facts.Hardened). Read errors leave the facts as
// they were: the other guards still decide.
func (r *Runner) guardFacts(ctx context.Context, x *run, f *mood.Facts, history []mood.RunRecord, rs []headless.Receipt) {
	if st, err := r.Director.State(ctx, x.Agent); err == nil {
		f.HyperthesisEntries, f.Hyperthesis = st.HyperthesisMagnitude()
	} else {
		r.log().Warn("state vector not read for the mood guards", "run", x.ID, "error", err)
	}
	patch, asked := latestPatch(rs)
	f.Sensitive = mood.Sensitive(patch.Files, x.item.Description+"\n"+strings.Join(x.item.Acceptance, "\n"))
	for _, h := range history {
		if h.Mood == mood.Paranoid {
			f.Hardened = true
		}
	}
	if asked {
		if t := privileged(patch); len(t) > 0 {
			f.Privilege, f.Touches = mood.Commit, t
		}
	}
}

// latestPatch returns the run's latest PatchReceipt's body and whether a
// commit of it was requested (a CommitRequest follows it).
func latestPatch(rs []headless.Receipt) (PatchBody, bool) {
	var b PatchBody
	asked := false
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindPatchReceipt:
			b, asked = PatchBody{}, false
			_ = json.Unmarshal(rec.Body, &b)
		case headless.KindCommitRequest:
			asked = true
		}
	}
	return b, asked
}

// privileged lists what a patch about to be committed reaches beyond the
// code (privilege proximity, seed 002 §4): files in the repository's
// DOCTRINE tier (as the tier file stood before the run), and files
// mood.ClassifyPath puts in a sensitive class (credentials, CI config,
// deploy scripts, choir's own config such as .choir/), as
// "<what>: <path>".
func privileged(p PatchBody) []string {
	var out []string
	for _, d := range p.Docs {
		if d.Tier == headless.TierDoctrine {
			out = append(out, "DOCTRINE: "+d.Path)
		}
	}
	for _, f := range p.Files {
		if c := mood.ClassifyPath(f); c != "" {
			out = append(out, c+": "+f)
		}
	}
	return out
}

package runner

import (
	"context"
	"encoding/json"
	"strings"

	"choir/choird/headless"
	"choir/choird/headless/mood"
)

// guardFacts completes the facts the mood guards decide on at a run's end
// with the two of seed 002 §4 read from the state and the work: the
// hyperthesis magnitude of the agent's state vector, and the privilege
// proximity of the work item and of the run's latest patch (its files).
// A PARANOID run of the work item in history means the proximity was
// looked at already (Facts.Hardened). Read errors leave the facts as they
// were: the other guards still decide.
func (r *Runner) guardFacts(ctx context.Context, x *run, f *mood.Facts, history []mood.RunRecord) {
	if st, err := r.Director.State(ctx, x.Agent); err == nil {
		f.HyperthesisEntries, f.Hyperthesis = st.HyperthesisMagnitude()
	} else {
		r.log().Warn("state vector not read for the mood guards", "run", x.ID, "error", err)
	}
	var files []string
	if rs, err := r.Director.Receipts(ctx, x.ID, 0); err == nil {
		files = patchFiles(rs)
	}
	f.Sensitive = mood.Sensitive(files, x.item.Description+"\n"+strings.Join(x.item.Acceptance, "\n"))
	for _, h := range history {
		if h.Mood == mood.Paranoid {
			f.Hardened = true
		}
	}
}

// patchFiles are the files of a run's latest PatchReceipt.
func patchFiles(rs []headless.Receipt) []string {
	var files []string
	for _, rec := range rs {
		if rec.Kind != headless.KindPatchReceipt {
			continue
		}
		var b PatchBody
		if json.Unmarshal(rec.Body, &b) == nil {
			files = b.Files
		}
	}
	return files
}

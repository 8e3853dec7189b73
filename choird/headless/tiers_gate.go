package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SpecChange is a run's SPEC_CHANGE_REQUEST (seed 002 §6, §9), the body
// of a SpecChangeRequest receipt: the SPECS paths its patch will change,
// the change in words, and the evidence for it. The director records it
// only merged, once the evidence checked out (RequestSpecChange); the
// run's commit may then touch exactly those SPECS paths.
type SpecChange struct {
	Paths  []string `json:"paths"`
	Change string   `json:"change"`
	// Evidence: receipts of a passing attestation ("<run id>#<seq>", a
	// VerifierResults receipt of a run of the same agent), or objects in
	// the object store ("sha256:<hex>").
	Evidence []string `json:"evidence"`
	Merged   bool     `json:"merged,omitempty"`
	By       string   `json:"by,omitempty"`
}

// Check validates a spec change's fields (not its evidence, which only
// the Director can check).
func (s *SpecChange) Check() error {
	if len(s.Paths) == 0 {
		return invalid("paths", "name the SPECS files the patch changes, relative to the repository's root", "no path")
	}
	if err := list("paths", s.Paths, MaxListItems, func(where, p string) error {
		if strings.HasSuffix(p, "/") {
			return invalid(where, "name each file, not a directory", "%q is a directory", p)
		}
		if err := checkRepoPath(p, false); err != nil {
			return invalid(where, "give a file's path relative to the repository's root, as a patch names it", "%v", err)
		}
		if p == TiersFile {
			return invalid(where, "the tier file is DOCTRINE: a human changes it", "%q is not a SPECS file", p)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := text("change", s.Change, true, MaxText); err != nil {
		return err
	}
	if len(s.Evidence) == 0 {
		return invalid("evidence", "cite a passing attestation's receipt (<run id>#<seq>) or an object (sha256:<hex>)", "no evidence: the director merges a spec change only with evidence")
	}
	return list("evidence", s.Evidence, MaxListItems, checkEvidence)
}

func checkEvidence(where, e string) error {
	if h, ok := strings.CutPrefix(e, "sha256:"); ok {
		return checkSHA256(where, h)
	}
	if !refRE.MatchString(e) {
		return invalid(where, "cite a passing attestation's receipt as <run id>#<seq> or an object as sha256:<hex>", "%q is neither", e)
	}
	return nil
}

// RequestSpecChange merges a run's SPEC_CHANGE_REQUEST: every piece of
// evidence must check out (a receipt that is a passing attestation of a
// run of the same agent; an object that exists, as exists says), else
// nothing is recorded and the error says which piece failed and why. The
// receipt is a SpecChangeRequest, merged by the director.
func (d *Director) RequestSpecChange(ctx context.Context, runID string, s SpecChange, exists func(hash string) error, key string) (Receipt, bool, error) {
	s.Merged, s.By = false, ""
	if err := s.Check(); err != nil {
		return Receipt{}, false, err
	}
	r, err := d.Run(ctx, runID)
	if err != nil {
		return Receipt{}, false, err
	}
	for i, e := range s.Evidence {
		where := "evidence[" + strconv.Itoa(i) + "]"
		if h, ok := strings.CutPrefix(e, "sha256:"); ok {
			if exists == nil {
				return Receipt{}, false, invalid(where, "cite a passing attestation's receipt instead", "objects cannot be checked here")
			}
			if err := exists(h); err != nil {
				return Receipt{}, false, invalid(where, "cite an object the store holds, unchanged", "object %s: %v", h, err)
			}
			continue
		}
		if err := d.attested(ctx, where, r, e); err != nil {
			return Receipt{}, false, err
		}
	}
	s.Merged, s.By = true, "director"
	return d.append(ctx, step{what: "request a spec change", runID: runID, kind: KindSpecChangeRequest, body: s, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return "", "", in(r, "request a spec change", RunRunning, RunVerifying)
		}})
}

// attested checks that ref is a passing attestation of a run of r's agent.
func (d *Director) attested(ctx context.Context, where string, r Run, ref string) error {
	rec, err := d.receipt(ctx, where, ref)
	if err != nil {
		return err
	}
	if rec.Kind != KindVerifierResults {
		return invalid(where, "cite a VerifierResults receipt whose attestation passed", "%s is a %s receipt, not an attestation", ref, rec.Kind)
	}
	var a Attestation
	if err := json.Unmarshal(rec.Body, &a); err != nil {
		return invalid(where, "cite another attestation", "%s cannot be read: %v", ref, err)
	}
	if !a.Passed {
		return invalid(where, "cite an attestation that passed", "%s is verifier %s's failing attestation", ref, a.Verifier)
	}
	other, err := d.store.Run(ctx, rec.RunID)
	if err != nil {
		return fmt.Errorf("%s: run %s: %w", where, rec.RunID, err)
	}
	if other.Agent != r.Agent {
		return invalid(where, "cite an attestation of your own agent's runs", "%s is a run of agent %s, not %s", ref, other.Agent, r.Agent)
	}
	return nil
}

// patchDocs is what CheckCommit reads of a PatchReceipt: the gated files
// it touches, or why the tier file could not be read.
type patchDocs struct {
	Docs       []DocChange `json:"docs"`
	TiersError string      `json:"tiers_error"`
}

// docGates adds to c what the latest patch's gated docs need: each SPECS
// path a merged SpecChangeRequest of the run naming it (else it is
// missing), any DOCTRINE path a human's approval (NeedsHuman). A tier file
// that could not be read refuses the commit.
func docGates(rs []Receipt, c *CommitCheck) {
	var pd patchDocs
	merged := map[string]string{} // SPECS path → the request that merged it
	for _, rec := range rs {
		switch rec.Kind {
		case KindPatchReceipt:
			pd = patchDocs{}
			json.Unmarshal(rec.Body, &pd)
		case KindSpecChangeRequest:
			var s SpecChange
			if json.Unmarshal(rec.Body, &s) == nil && s.Merged {
				for _, p := range s.Paths {
					merged[p] = rec.Ref()
				}
			}
		}
	}
	if pd.TiersError != "" {
		c.Missing = append(c.Missing, "the repository's doc tiers cannot be read ("+pd.TiersError+"): a human must fix "+TiersFile)
	}
	for _, dc := range pd.Docs {
		switch dc.Tier {
		case TierSpecs:
			if ref, ok := merged[dc.Path]; ok {
				c.Gates = append(c.Gates, fmt.Sprintf("SPECS path %s: merged by %s", dc.Path, ref))
				continue
			}
			c.Missing = append(c.Missing, fmt.Sprintf("the patch changes %s, which is SPECS: that needs a merged SPEC_CHANGE_REQUEST naming it with evidence (choir.run.spec_change citing a passing attestation)", dc.Path))
		case TierDoctrine:
			c.NeedsHuman = true
			g := fmt.Sprintf("DOCTRINE path %s: a human must approve this commit (choirctl run approve <run>)", dc.Path)
			if !slices.Contains(c.Gates, g) {
				c.Gates = append(c.Gates, g)
			}
		}
	}
}

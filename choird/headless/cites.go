package headless

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// ObjectCitePrefix starts the citation of an object in the object store:
// "sha256:<64 hex>" (Pointer.Cite).
const ObjectCitePrefix = "sha256:"

// CitesChecker checks citations of objects against the object store (the
// knowledge base's kb.CheckCites): each must exist and still hash to its
// name. Its error names the citation refused and what to do.
type CitesChecker func(ctx context.Context, cites []string) error

// checkCite accepts the citation of a receipt ("<run id>#<seq>") or of an
// object ("sha256:<hex>").
func checkCite(where, s string) error {
	if h, ok := strings.CutPrefix(s, ObjectCitePrefix); ok {
		if !sha256RE.MatchString(h) {
			return invalid(where, "cite an object as sha256: and its 64 lowercase hex digits, as `choirctl kb search` shows it", "%q is not an object citation", clipCite(s))
		}
		return nil
	}
	if !refRE.MatchString(s) {
		return invalid(where, "cite a receipt as <run id>#<seq>, e.g. r-0123456789ab#3, or an object as sha256:<hex>", "%q is not a receipt reference or an object citation", clipCite(s))
	}
	return nil
}

func clipCite(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// objectCites returns a receipt body's top-level "cites" member (notes,
// requests) when it cites an object, whole, so the checker's errors name
// the citation at its index: what the Director's CheckCites must find
// intact before the receipt is appended. (A spec change's evidence is
// checked by RequestSpecChange's exists.)
func objectCites(body []byte) []string {
	var b struct {
		Cites []string `json:"cites"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	for _, c := range b.Cites {
		if strings.HasPrefix(c, ObjectCitePrefix) {
			return b.Cites
		}
	}
	return nil
}

// pointerRE finds what is meant as an object pointer in a report's free
// text: "sha256:" and at least 8 hex digits (a truncated or upper-case one
// is then refused by checkCite rather than passed over as prose).
var pointerRE = regexp.MustCompile(`sha256:[0-9A-Fa-f]{8,}`)

// textPointers returns the object pointers text names, in order, once each.
func textPointers(text string) []string {
	var out []string
	for _, p := range pointerRE.FindAllString(text, -1) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// reportCites returns the citations of a run's report: those listed, then
// the object pointers its text names that are not listed already.
func reportCites(listed []string, text string) []string {
	out := slices.Clone(listed)
	for _, p := range textPointers(text) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

package headless

import (
	"context"
	"encoding/json"
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

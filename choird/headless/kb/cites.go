package kb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"choir/choird/headless"
	"choir/choird/headless/objects"
)

// CitePrefix starts the citation of an object: "sha256:<64 hex>".
const CitePrefix = "sha256:"

// CheckCites checks each citation of an object ("sha256:<hex>") against
// the object store: the object must exist and its content must still hash
// to its name (read back in full, verified). The error names the first
// citation refused, what is wrong and what to do; it is a
// *headless.ValidationError at cites[i], so the director's API answers
// 400. Citations of receipts ("<run id>#<seq>") are not its business and
// pass.
func CheckCites(ctx context.Context, objs *objects.Store, cites []string) error {
	for i, c := range cites {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !strings.HasPrefix(c, CitePrefix) {
			continue
		}
		where := fmt.Sprintf("cites[%d]", i)
		h := strings.TrimPrefix(c, CitePrefix)
		if !objects.Valid(h) {
			return &headless.ValidationError{Where: where,
				Problem: fmt.Sprintf("%q is not an object citation (sha256: and 64 lowercase hex digits)", clip(c, 80)),
				Fix:     "cite an object as `choirctl kb search` shows it, e.g. sha256:" + strings.Repeat("0", 64)}
		}
		if err := readBack(objs, h); err != nil {
			var ce *objects.CorruptError
			switch {
			case errors.Is(err, objects.ErrNotFound):
				return &headless.ValidationError{Where: where,
					Problem: fmt.Sprintf("%s names no object in the object store", c),
					Fix:     "cite an object the knowledge base holds (`choirctl kb search`), or store the object before citing it"}
			case errors.As(err, &ce):
				return &headless.ValidationError{Where: where,
					Problem: fmt.Sprintf("%s: the object's content no longer hashes to its name (%s)", c, ce.Error()),
					Fix:     "do not cite it until the object is stored again from its source"}
			default:
				return fmt.Errorf("check %s at %s: %w", c, where, err)
			}
		}
	}
	return nil
}

// readBack reads the object h to its end through the store's verifying
// reader.
func readBack(objs *objects.Store, h string) error {
	rc, err := objs.Open(h)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// CheckCites is the package's CheckCites on the KB's object store: the
// director's hook for notes and requests.
func (k *KB) CheckCites(ctx context.Context, cites []string) error {
	return CheckCites(ctx, k.objs, cites)
}

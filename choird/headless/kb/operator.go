package kb

import (
	"context"
	"errors"
	"net/http"

	"choir/internal/ctl"
)

// Operator is the KB as the admin API serves it (POST /v1/kb/search,
// choirctl kb search): the wire types of internal/ctl, a refused query as
// a 400 *ctl.Error with its reason.
type Operator struct{ KB *KB }

// Search answers a KBSearch with pointers.
func (o Operator) Search(ctx context.Context, q ctl.KBSearch) (ctl.KBAnswer, error) {
	f, err := o.KB.Search(ctx, Query{Text: q.Query, Agent: q.Agent, Kind: q.Kind, Limit: q.Limit})
	if r, ok := errors.AsType[*Refusal](err); ok {
		return ctl.KBAnswer{}, ctl.Errorf(http.StatusBadRequest, "invalid_input", "%s", r.Error())
	}
	if err != nil {
		return ctl.KBAnswer{}, err
	}
	ans := ctl.KBAnswer{Pointers: make([]ctl.KBPointer, len(f.Pointers)), Mode: f.Mode, Note: f.Note}
	for i, p := range f.Pointers {
		ans.Pointers[i] = ctl.KBPointer{Object: p.Object, Kind: p.Kind, Snippet: p.Snippet, Score: p.Score}
	}
	return ans, nil
}

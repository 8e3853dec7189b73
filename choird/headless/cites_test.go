package headless

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A note may cite receipts and objects; the object citations go through
// the Director's CheckCites before anything is appended, and a refusal
// appends nothing. A citation that is neither form is refused by the
// note's own check, before CheckCites.
func TestNoteObjectCitesAreChecked(t *testing.T) {
	d, ctx := newDirector(t)
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{}).ID)
	if _, _, err := d.MarkRunning(ctx, r.ID, base, "/wt/1", ""); err != nil {
		t.Fatal(err)
	}
	good, bad := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	var asked [][]string
	d.CheckCites = func(_ context.Context, cites []string) error {
		asked = append(asked, cites)
		for i, c := range cites {
			if c == bad {
				return &ValidationError{Where: "cites[" + string(rune('0'+i)) + "]", Problem: c + " names no object", Fix: "cite an object that exists"}
			}
		}
		return nil
	}
	note := func(cites ...string) error {
		_, _, err := d.AddNote(ctx, r.ID, Note{Type: NoteObservation, Text: "x", Cites: cites}, "")
		return err
	}
	if err := note(RefOf(r.ID, 1), good); err != nil {
		t.Fatalf("AddNote(receipt, good object) = %v", err)
	}
	if err := note(RefOf(r.ID, 1)); err != nil || len(asked) != 1 {
		t.Fatalf("AddNote(receipt only) = %v, CheckCites called %d times; want nil, not called again", err, len(asked))
	}
	before, _ := d.Receipts(ctx, r.ID, 0)
	err := note(RefOf(r.ID, 1), bad)
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "cites[1]") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("AddNote(missing object) = %v; want refused at cites[1], naming it", err)
	}
	if after, _ := d.Receipts(ctx, r.ID, 0); len(after) != len(before) {
		t.Fatalf("a refused note appended a receipt: %d → %d", len(before), len(after))
	}
	for _, c := range []string{"sha256:" + strings.Repeat("A", 64), "sha256:abc", "sha256:", "md5:" + strings.Repeat("a", 32), "sha256:" + strings.Repeat("a", 64) + "\n"} {
		n := len(asked)
		if err := note(c); !errors.Is(err, ErrInvalidInput) || len(asked) != n {
			t.Errorf("AddNote(cite %q) = %v (CheckCites asked: %t); want refused by the note's check", c, err, len(asked) != n)
		}
	}
}

package kb

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/objects"
)

// A citation stands only for an object that exists and still hashes to
// its name; each refusal names the citation, says what is wrong and what
// to do, and is invalid input (400 at the API).
func TestCheckCites(t *testing.T) {
	objs, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good, err := objs.Put([]byte("a claim"))
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := objs.Put([]byte("the original"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := objs.Path(tampered)
	if err := os.WriteFile(p, []byte("the original, changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := objects.Sum([]byte("never stored"))
	ctx := context.Background()
	if err := CheckCites(ctx, objs, []string{"sha256:" + good, "r-0123456789ab#3"}); err != nil {
		t.Fatalf("CheckCites(present, receipt ref) = %v; want nil", err)
	}
	if err := CheckCites(ctx, objs, nil); err != nil {
		t.Fatalf("CheckCites(nil) = %v", err)
	}
	cases := []struct {
		cite  string
		where string
		want  []string
	}{
		{"sha256:" + missing, "cites[1]", []string{missing, "names no object", "choirctl kb search"}},
		{"sha256:" + tampered, "cites[1]", []string{tampered, "no longer hashes", "stored again"}},
		{"sha256:" + strings.ToUpper(good), "cites[1]", []string{"not an object citation", "64 lowercase hex"}},
		{"sha256:zz", "cites[1]", []string{"not an object citation"}},
		{"sha256:../../../etc/passwd", "cites[1]", []string{"not an object citation"}},
		{"sha256:" + good + "00", "cites[1]", []string{"not an object citation"}},
		{"sha256:", "cites[1]", []string{"not an object citation"}},
		{"sha256:" + strings.Repeat("x", 5000), "cites[1]", []string{"not an object citation"}},
	}
	for _, c := range cases {
		err := CheckCites(ctx, objs, []string{"sha256:" + good, c.cite})
		var ve *headless.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, headless.ErrInvalidInput) || ve.Where != c.where {
			t.Errorf("CheckCites(%.80q) = %v; want a ValidationError at %s", c.cite, err, c.where)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckCites(%.80q) = %q; want it to say %q", c.cite, err, w)
			}
		}
		if len(err.Error()) > 1000 {
			t.Errorf("CheckCites(%.80q): the error is %d bytes; want it short", c.cite, len(err.Error()))
		}
	}
	// The tampered file is still there: checking never repairs or removes.
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the tampered object's file: %v", err)
	}
}

// A run's report is checked like a note: the object pointers its commit
// request's summary names, and those it cites, must exist and still hash
// to their names, or the request is refused naming the pointer and
// nothing is appended; the pointers that pass are kept in the receipt's
// cites.
func TestCommitRequestCites(t *testing.T) {
	objs, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := objs.Put([]byte("a claim"))
	tampered, _ := objs.Put([]byte("the original"))
	p, _ := objs.Path(tampered)
	if err := os.WriteFile(p, []byte("the original, changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	patch, _ := objs.Put([]byte("diff --git a/x b/x\n"))
	missing := objects.Sum([]byte("never stored"))

	ctx := context.Background()
	d := headless.New(headless.NewMemStore())
	d.CheckCites = func(ctx context.Context, cites []string) error { return CheckCites(ctx, objs, cites) }
	run := startRun(t, d, "kb-1")
	req := func(summary string, cites ...string) error {
		_, _, err := d.RequestCommit(ctx, run, headless.CommitRequest{Summary: summary, Patch: patch, Cites: cites}, "")
		return err
	}

	for _, c := range []struct {
		summary string
		cites   []string
		want    []string
	}{
		{"fixed, as sha256:" + missing + " says", nil, []string{"sha256:" + missing, "names no object"}},
		{"fixed, as sha256:" + tampered + " says", nil, []string{"sha256:" + tampered, "no longer hashes"}},
		{"fixed", []string{"sha256:" + good, "sha256:" + missing}, []string{"cites[1]", "sha256:" + missing, "names no object"}},
		{"fixed, see sha256:" + good[:12] + "…", nil, []string{"summary", "sha256:" + good[:12], "not an object citation"}},
		{"fixed, see sha256:" + strings.ToUpper(good), nil, []string{"summary", "not an object citation"}},
	} {
		err := req(c.summary, c.cites...)
		if !errors.Is(err, headless.ErrInvalidInput) {
			t.Errorf("RequestCommit(%.60q, cites %v) = %v; want refused as invalid input", c.summary, c.cites, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("RequestCommit(%.60q) = %q; want it to say %q", c.summary, err, w)
			}
		}
	}
	if rs, _ := d.Receipts(ctx, run, 0); rs[len(rs)-1].Kind != headless.KindRunStarted {
		t.Fatalf("after refused requests the latest receipt is %s; want nothing appended after RunStarted", rs[len(rs)-1].Kind)
	}

	// Valid: a receipt cited explicitly, an object named in the summary
	// (twice), the patch's own hash without the prefix (not a pointer).
	ref := headless.RefOf(run, 1)
	if err := req("fixed per sha256:"+good+"; patch "+patch+"; again sha256:"+good, ref); err != nil {
		t.Fatalf("RequestCommit(valid pointers) = %v", err)
	}
	rs, _ := d.Receipts(ctx, run, 0)
	last := rs[len(rs)-1]
	var body headless.CommitRequest
	if err := json.Unmarshal(last.Body, &body); err != nil || last.Kind != headless.KindCommitRequest {
		t.Fatalf("latest receipt = %s %s, %v; want the CommitRequest", last.Kind, last.Body, err)
	}
	if want := []string{ref, "sha256:" + good}; !slices.Equal(body.Cites, want) {
		t.Errorf("CommitRequest receipt cites = %q; want %q", body.Cites, want)
	}
	if r, _ := d.Run(ctx, run); r.Status != headless.RunAwaitingApproval {
		t.Errorf("run after its commit request is %s; want awaiting_approval", r.Status)
	}
}

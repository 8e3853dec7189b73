package kb

import (
	"context"
	"errors"
	"os"
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

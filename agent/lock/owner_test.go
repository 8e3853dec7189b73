package lock

import (
	"errors"
	"strings"
	"testing"
)

func TestParseOwner(t *testing.T) {
	tests := []struct {
		in      string
		want    Owner
		edge    bool
		job     string
		wantErr bool
	}{
		{"edge", Edge, true, "", false},
		{"core:refactor-auth", "core:refactor-auth", false, "refactor-auth", false},
		{"core:v1.2_x", "core:v1.2_x", false, "v1.2_x", false},
		{"core:" + strings.Repeat("j", 64), Owner("core:" + strings.Repeat("j", 64)), false, strings.Repeat("j", 64), false},
		{"core:" + strings.Repeat("j", 65), "", false, "", true},
		{"core:", "", false, "", true},
		{"core", "", false, "", true},
		{"core:a b", "", false, "", true},
		{"core:a:b", "", false, "", true},
		{"Edge", "", false, "", true},
		{"", "", false, "", true},
	}
	for _, tt := range tests {
		got, err := ParseOwner(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseOwner(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidOwner) {
				t.Errorf("ParseOwner(%q) error %v; want ErrInvalidOwner", tt.in, err)
			}
			continue
		}
		if got.IsEdge() != tt.edge || got.IsCore() == tt.edge || got.Job() != tt.job {
			t.Errorf("ParseOwner(%q): IsEdge %v, IsCore %v, Job %q; want %v, %v, %q",
				tt.in, got.IsEdge(), got.IsCore(), got.Job(), tt.edge, !tt.edge, tt.job)
		}
	}
}

func TestCore(t *testing.T) {
	if got, err := Core("write-tests"); got != "core:write-tests" || err != nil {
		t.Errorf("Core(write-tests) = %q, %v; want core:write-tests, nil", got, err)
	}
	if got, err := Core("../x"); err == nil {
		t.Errorf("Core(../x) = %q, nil; want an error", got)
	}
}

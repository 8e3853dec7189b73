package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"choir/internal/manifest"
)

// What choir-agent hashes from the /choir it finds (manifest.Dirs) equals
// what the build records for the tree it bakes, with overrides, executables
// beside manifests and reformatted JSON: otherwise every start would be
// refused.
func TestAgentHashesWhatTheBuildRecords(t *testing.T) {
	for name, tt := range map[string]struct{ g, a files }{
		"merge": {globalFiles(), agentFiles()},
		"bare":  {files{"Dockerfile.base": "FROM x\n", "identity/USER.md": "u\n"}, files{"Dockerfile": "FROM choir-base\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			g, a := loadPair(t, tt.g, tt.a)
			tree, err := check(g, a)
			if err != nil {
				t.Fatalf("check() = %v", err)
			}
			dir := t.TempDir()
			for _, e := range tree.Entries {
				p := filepath.Join(dir, filepath.FromSlash(e.Path))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, e.Body, e.Mode); err != nil {
					t.Fatal(err)
				}
			}
			tools, err := manifest.Dirs(filepath.Join(dir, "tools", "global"), filepath.Join(dir, "tools", "agent"))
			if err != nil {
				t.Fatal(err)
			}
			skills, err := manifest.Dirs(filepath.Join(dir, "skills"))
			if err != nil {
				t.Fatal(err)
			}
			if tools != tree.ToolHash || skills != tree.SkillHash {
				t.Errorf("hashed from the baked tree: tools %s, skills %s; the build records %s, %s", tools, skills, tree.ToolHash, tree.SkillHash)
			}
		})
	}
}

// fakeRecords is the store's image records.
type fakeRecords struct {
	ids      map[string]string
	recorded []Record
	fail     error
}

var _ Records = (*fakeRecords)(nil)

func (f *fakeRecords) RecordImage(_ context.Context, r Record) error {
	if f.fail != nil {
		return f.fail
	}
	f.recorded = append(f.recorded, r)
	return nil
}

func (f *fakeRecords) RecordedImageID(_ context.Context, tag string) (string, error) {
	if f.fail != nil {
		return "", f.fail
	}
	id, ok := f.ids[tag]
	if !ok {
		return "", fmt.Errorf("%s: %w", tag, ErrNoRecord)
	}
	return id, nil
}

// An existing image of the tag is reused only when it is the image a build
// recorded: one retagged outside choird, or never recorded, is built again.
func TestExistingImageReusedOnlyWhenRecorded(t *testing.T) {
	const tag, id = "choir-agent-a:0123456789ab", "sha256:aaaa"
	for _, tt := range []struct {
		name    string
		b       Builder
		imageID string
		want    bool
		wantErr bool
	}{
		{"no records kept", Builder{}, id, true, false},
		{"recorded", Builder{Records: &fakeRecords{ids: map[string]string{tag: id}}}, id, true, false},
		{"retagged outside choird", Builder{Records: &fakeRecords{ids: map[string]string{tag: id}}}, "sha256:bbbb", false, false},
		{"never recorded", Builder{Records: &fakeRecords{}}, id, false, false},
		{"records unreadable", Builder{Records: &fakeRecords{fail: errors.New("connection refused")}}, id, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.b.reusable(context.Background(), tag, tt.imageID, func(string, ...any) {})
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("reusable(%s) = %v, %v; want %v (error: %v)", tt.imageID, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

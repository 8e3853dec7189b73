package build

import (
	"errors"
	"maps"
	"testing"
)

// TestCheckAndImageContent: Check reads what a build would build from,
// without building; ImageContent reads the same back from the image the
// build made; a commit that changes a tool changes that file's
// fingerprint and nothing else's.
func TestCheckAndImageContent(t *testing.T) {
	f := newFixture(t)
	before, err := f.b.Check(f.ctx, f.cfg, f.agentID, nil)
	if err != nil {
		t.Fatalf("Check() = %v", err)
	}
	for _, want := range []string{"global:Dockerfile.base", "global:tools/acme.echo.json", "global:identity/USER.md", f.agentID + ":Dockerfile"} {
		if before.Files[want] == "" {
			t.Errorf("Check().Files has no %q: %v", want, before.Files)
		}
	}
	if _, ok := before.Files["global:nonce"]; ok {
		t.Error("Check().Files lists a file the image does not hold (nonce)")
	}
	if img, err := f.b.ImageContent(f.ctx, f.agentID, AgentRepo(f.agentID)+":latest"); err != nil || img != nil {
		t.Fatalf("ImageContent(never built) = %v, %v; want nil, nil", img, err)
	}

	res, err := f.b.Build(f.ctx, f.cfg, f.agentID, nil)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	img, err := f.b.ImageContent(f.ctx, f.agentID, res.Image)
	if err != nil || img == nil {
		t.Fatalf("ImageContent(%s) = %v, %v", res.Image, img, err)
	}
	if img.Global.Commit != before.Global.Commit || img.Agent.Commit != before.Agent.Commit || !maps.Equal(img.Files, before.Files) {
		t.Errorf("ImageContent() = %+v;\nCheck() before the build = %+v", img, before)
	}

	f.global.commit(files{"tools/acme.echo.json": toolManifest("acme.echo", "a new description")})
	after, err := f.b.Check(f.ctx, f.cfg, f.agentID, nil)
	if err != nil {
		t.Fatalf("Check() after a commit = %v", err)
	}
	for name, sum := range after.Files {
		changed := sum != img.Files[name]
		if changed != (name == "global:tools/acme.echo.json") {
			t.Errorf("%s: changed = %v after a commit that changes only tools/acme.echo.json", name, changed)
		}
	}

	f.agent.commit(files{"skills/x.json": skillSpec("x", "acme.nope")})
	var inv *InvalidError
	if _, err := f.b.Check(f.ctx, f.cfg, f.agentID, nil); !errors.As(err, &inv) {
		t.Errorf("Check(skill naming an unknown tool) = %v; want an *InvalidError", err)
	}
}

package build

import (
	"os"
	"strings"
	"testing"

	"choir/testkit/imagetest"
)

func TestDockerfileBaseIsTheTopLevelFile(t *testing.T) {
	top, err := os.ReadFile("../../Dockerfile.base")
	if err != nil {
		t.Fatal(err)
	}
	if string(top) != DockerfileBase {
		t.Error("Dockerfile.base at the top of the repository differs from choird/build/Dockerfile.base; copy the latter over it")
	}
}

// TestDockerfileBaseDebian builds an agent on the reference Dockerfile.base,
// unchanged, from a Debian bookworm image made without a registry, and runs
// what the image promises.
func TestDockerfileBaseDebian(t *testing.T) {
	f := newFixture(t)
	imagetest.Debian(t, f.c)
	f.global.commit(files{"Dockerfile.base": DockerfileBase})
	res := f.mustBuild()
	if !res.BaseBuilt {
		t.Error("the base image was not built")
	}
	f.wantLine("are installed") // the offline path, not apt-get
	out := run(t, f.c, res.Image, "git --version && rg --version && python3 --version && ssh -V 2>&1 && "+
		"ls /etc/ssl/certs/ca-certificates.crt && readlink /choir/bin/git-cred-helper && "+
		"ls /var/lib/apt/lists | wc -l && /choir/bin/choir-agent --help 2>&1 && cat /choir/version.json && "+
		"echo setuid=$(find / -xdev -perm /6000 -type f | wc -l)")
	for _, want := range []string{"git version 2.", "ripgrep", "Python 3.11", "OpenSSH", "\nchoir-agent\n0\n", "-control-plane", `"image_version": "` + res.ImageVersion + `"`,
		"setuid=0"} { // the swarm runtime refuses an image with a setuid or setgid file
		if !strings.Contains(out, want) {
			t.Errorf("the image lacks %q:\n%s", want, out)
		}
	}
	img, err := f.c.ImageInspect(f.ctx, res.Image)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(img.Config.Entrypoint, " "); got != "/choir/bin/choir-agent" {
		t.Errorf("entrypoint = %q; want /choir/bin/choir-agent", got)
	}
	t.Logf("agent image %s: %d bytes", res.Image, img.Size)
}

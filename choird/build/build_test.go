package build

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
)

func TestMain(m *testing.M) {
	dockertest.Main(m)
	testkit.CleanupBuilds()
}

// testBaseImage is the busybox image the test Dockerfile.base starts from.
const testBaseImage = "choir-test/busybox:1"

// fixture is a choir home with a global repo and one agent repo.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	c       *docker.Client
	b       *Builder
	cfg     *config.Config
	agentID string
	global  *origin
	agent   *origin
	lines   []string
	mu      sync.Mutex
}

func nonce() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newFixture makes the repos (unique to the test, so that no other test
// shares their base image) and a Builder on the test engine.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	c := dockertest.Engine(t)
	dockertest.BusyboxImage(t, c, testBaseImage)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, c: c, agentID: "t-" + nonce()}
	g := globalFiles()
	g["nonce"] = nonce()
	g["Dockerfile.base"] = "FROM " + testBaseImage + "\nCOPY choir-agent /choir/bin/choir-agent\n" +
		"RUN ln -s choir-agent /choir/bin/git-cred-helper\nENTRYPOINT [\"/choir/bin/choir-agent\"]\n"
	f.global = newOrigin(t, g)
	f.agent = newOrigin(t, agentFiles())
	f.cfg = &config.Config{
		GlobalRepo: config.Repo{URL: f.global.bare, Ref: "main"},
		Agents:     map[string]config.Agent{f.agentID: {Repo: config.Repo{URL: "file://" + f.agent.bare, Ref: "main"}}},
	}
	f.b = &Builder{Docker: c, Home: config.Home{Dir: t.TempDir()}, AgentBinary: testkit.Build(t, "choir/agent")}
	t.Cleanup(func() { removeImages(t, c, f.agentID, true) })
	return f
}

// removeImages removes what a test built: the agent's images and, with
// bases, the base images of its (unique) global repo.
func removeImages(t testing.TB, c *docker.Client, agentID string, bases bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := c.ImageList(ctx, docker.ImageListOptions{Filters: docker.Filters{"label": {LabelAgent + "=" + agentID}}})
	if err != nil {
		t.Logf("list images: %v", err)
		return
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			c.ImageRemove(ctx, tag, docker.ImageRemoveOptions{})
		}
		c.ImageRemove(ctx, img.ID, docker.ImageRemoveOptions{Force: true})
		if b := img.Labels[LabelBaseImage]; b != "" && bases {
			c.ImageRemove(ctx, b, docker.ImageRemoveOptions{})
		}
	}
}

func (f *fixture) build() (*Result, error) {
	f.t.Helper()
	f.mu.Lock()
	f.lines = nil
	f.mu.Unlock()
	return f.b.Build(f.ctx, f.cfg, f.agentID, func(l string) {
		f.mu.Lock()
		f.lines = append(f.lines, l)
		f.mu.Unlock()
	})
}

func (f *fixture) mustBuild() *Result {
	f.t.Helper()
	res, err := f.build()
	if err != nil {
		f.t.Fatalf("Build() = %v\nprogress:\n%s", err, f.progress())
	}
	return res
}

func (f *fixture) progress() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.lines, "\n")
}

func (f *fixture) wantLine(substr string) {
	f.t.Helper()
	if !strings.Contains(f.progress(), substr) {
		f.t.Errorf("progress has no line with %q:\n%s", substr, f.progress())
	}
}

// run runs script with sh in a container of image and returns its stdout.
func run(t *testing.T, c *docker.Client, image, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := c.ContainerCreate(ctx, "", &docker.ContainerConfig{
		Image: image, Entrypoint: []string{"/bin/sh", "-c", script}, Labels: dockertest.Labels(t, c),
	}, nil)
	if err != nil {
		t.Fatalf("create a container of %s: %v", image, err)
	}
	if err := c.ContainerStart(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	w, err := c.ContainerWait(ctx, created.ID, docker.WaitNotRunning)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := c.ContainerLogs(ctx, created.ID, docker.LogsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if err := logs.Copy(&stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if w.StatusCode != 0 {
		t.Fatalf("%q in %s exited %d: %s%s", script, image, w.StatusCode, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// latestImage is how the lifecycle picks the image an agent starts from.
// latestImage is the image the lifecycle would start: the one tagged
// choir-agent-<id>:latest, named by its version label.
func latestImage(t testing.TB, c *docker.Client, agentID string) string {
	t.Helper()
	img, err := c.ImageInspect(context.Background(), AgentRepo(agentID)+":latest")
	if err != nil {
		t.Fatalf("inspect %s:latest: %v", AgentRepo(agentID), err)
	}
	return AgentRepo(agentID) + ":" + img.Config.Labels[LabelImageVersion]
}

func TestBuildEndToEnd(t *testing.T) {
	f := newFixture(t)
	res := f.mustBuild()

	if !res.BaseBuilt || !res.AgentBuilt {
		t.Errorf("first build: BaseBuilt %v, AgentBuilt %v; want both built", res.BaseBuilt, res.AgentBuilt)
	}
	if want := AgentRepo(f.agentID) + ":" + res.ImageVersion; res.Image != want {
		t.Errorf("Image = %q; want %q", res.Image, want)
	}
	gsha := git(t, f.global.work, "rev-parse", "HEAD")
	asha := git(t, f.agent.work, "rev-parse", "HEAD")
	if res.Version.GlobalRepoCommit != gsha || res.Version.AgentRepoCommit != asha {
		t.Errorf("commits = %s, %s; want %s, %s", res.Version.GlobalRepoCommit, res.Version.AgentRepoCommit, gsha, asha)
	}
	if !strings.HasPrefix(res.BaseImage, "choir-base:"+gsha[:7]+"-"+res.BinarySHA256[:12]) {
		t.Errorf("BaseImage = %q; want choir-base:%s-%s", res.BaseImage, gsha[:7], res.BinarySHA256[:12])
	}
	f.wantLine("fetching global repo " + f.global.bare)
	f.wantLine("global repo at " + gsha[:7])
	f.wantLine("agent repo of " + f.agentID + " at " + asha[:7])
	f.wantLine("base: Step 1/5 : FROM " + testBaseImage)
	f.wantLine("agent: Step 2/4 : RUN echo agent-step")
	f.wantLine("agent: agent-step")
	f.wantLine("built " + res.Image)

	img, err := f.c.ImageInspect(f.ctx, res.Image)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{LabelManaged: "true", LabelAgent: f.agentID, LabelImageVersion: res.ImageVersion} {
		if got := img.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q; want %q", k, got, v)
		}
	}
	if got := strings.Join(img.Config.Entrypoint, " "); got != "/choir/bin/choir-agent" {
		t.Errorf("entrypoint = %q; want /choir/bin/choir-agent", got)
	}
	if _, err := f.c.ImageInspect(f.ctx, BaseLatest); err != nil {
		t.Errorf("no %s: %v", BaseLatest, err)
	}
	if got := latestImage(t, f.c, f.agentID); got != res.Image {
		t.Errorf("the lifecycle would start %q; want %q", got, res.Image)
	}

	var v Version
	out := run(t, f.c, res.Image, "cat /choir/version.json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v != res.Version {
		t.Errorf("/choir/version.json = %s (%v); want %+v", out, err, res.Version)
	}
	out = run(t, f.c, res.Image, "cd /choir && ls tools/* skills && cat USER.md SOUL.md SOUL-CORE.md && ls -l tools/agent/acme.greet && tools/agent/acme.greet && readlink bin/git-cred-helper")
	for _, want := range []string{
		"tools/agent:\nacme.echo\nacme.echo.json\nacme.greet\nacme.greet.json\n",
		"tools/global:\nacme.compiled.json\nacme.wc\nacme.wc.json\n",
		"skills:\ncount.json\nsummarise.json\n",
		"The user likes tea.\nagent soul\nglobal core soul\n",
		"-rwxr-xr-x",
		"hello\nchoir-agent\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the image's /choir lacks %q:\n%s", want, out)
		}
	}

	// The same commits again: nothing to build.
	again := f.mustBuild()
	if again.AgentBuilt || again.BaseBuilt || again.Image != res.Image || again.ImageID != res.ImageID {
		t.Errorf("second build = %+v; want the same image, not rebuilt", again)
	}
	f.wantLine("not rebuilt")
}

func TestBuildReusesBase(t *testing.T) {
	f := newFixture(t)
	first := f.mustBuild()
	f.agent.commit(files{"tools/acme.greet.json": toolManifest("acme.greet", "greets better")})
	second := f.mustBuild()
	if second.BaseBuilt || !second.AgentBuilt || second.BaseImage != first.BaseImage {
		t.Errorf("after an agent change: BaseBuilt %v, AgentBuilt %v, base %s; want base %s reused, agent built",
			second.BaseBuilt, second.AgentBuilt, second.BaseImage, first.BaseImage)
	}
	f.wantLine("base image " + first.BaseImage + " (cached)")
	if second.ImageVersion == first.ImageVersion {
		t.Error("the image version did not change with the agent repo")
	}
	v1, v2 := first.Version, second.Version
	if v1.ToolManifestHash == v2.ToolManifestHash || v1.SkillManifestHash != v2.SkillManifestHash || v1.GlobalRepoCommit != v2.GlobalRepoCommit {
		t.Errorf("versions %+v then %+v; want only the tool hash, the agent commit and the image version changed", v1, v2)
	}
	if _, err := f.c.ImageInspect(f.ctx, first.Image); err != nil {
		t.Errorf("the first image is gone: %v", err)
	}
	if got := latestImage(t, f.c, f.agentID); got != second.Image {
		t.Errorf("the lifecycle would start %q; want %q", got, second.Image)
	}

	// Going back to the first commit picks the first image again, and makes
	// it the one the lifecycle starts.
	f.cfg.Agents[f.agentID] = config.Agent{Repo: config.Repo{URL: f.agent.bare, Ref: first.Version.AgentRepoCommit}}
	back := f.mustBuild()
	if back.Image != first.Image || back.AgentBuilt {
		t.Errorf("back at the first commit: %s (built %v); want %s reused", back.Image, back.AgentBuilt, first.Image)
	}
	if got := latestImage(t, f.c, f.agentID); got != first.Image {
		t.Errorf("the lifecycle would start %q; want %q", got, first.Image)
	}
}

// buildErr runs a build that must fail and checks that the earlier image
// and clones are still there.
func (f *fixture) buildErr(prev *Result, want ...string) error {
	f.t.Helper()
	res, err := f.build()
	if err == nil {
		f.t.Fatalf("Build() = %+v; want an error", res)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			f.t.Errorf("Build() = %v;\nwant it to mention %q", err, w)
		}
	}
	if _, ierr := f.c.ImageInspect(f.ctx, prev.Image); ierr != nil {
		f.t.Errorf("after a failed build the previous image %s is gone: %v", prev.Image, ierr)
	}
	if _, ierr := f.c.ImageInspect(f.ctx, prev.BaseImage); ierr != nil {
		f.t.Errorf("after a failed build the base image %s is gone: %v", prev.BaseImage, ierr)
	}
	for _, dir := range []string{repo.GlobalDir(f.b.Home), repo.AgentDir(f.b.Home, f.agentID)} {
		if out := git(f.t, dir, "status", "--porcelain"); out != "" {
			f.t.Errorf("clone %s is not clean after a failed build: %s", dir, out)
		}
	}
	if got := latestImage(f.t, f.c, f.agentID); got != prev.Image {
		f.t.Errorf("after a failed build the lifecycle would start %q; want %q", got, prev.Image)
	}
	return err
}

func TestBuildFailures(t *testing.T) {
	f := newFixture(t)
	good := f.mustBuild()
	agentURL := f.cfg.Agents[f.agentID].Repo.URL

	t.Run("missing Dockerfile", func(t *testing.T) {
		f.agent.commit(files{"-Dockerfile": ""})
		f.buildErr(good, "agent repo of "+f.agentID, "Dockerfile: missing")
		f.agent.commit(files{"Dockerfile": agentFiles()["Dockerfile"]})
	})
	t.Run("invalid manifest", func(t *testing.T) {
		f.agent.commit(files{"tools/acme.greet.json": `{"llm": {"name": "acme.greet"}, "runtime": {}}`})
		err := f.buildErr(good, "agent repo of "+f.agentID, "tools/acme.greet.json: /llm/input_schema: missing")
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("error %T is not an *InvalidError", err)
		}
		f.agent.commit(files{"tools/acme.greet.json": agentFiles()["tools/acme.greet.json"]})
	})
	t.Run("failing step", func(t *testing.T) {
		f.agent.commit(files{"Dockerfile": "FROM choir-base\nRUN echo about to fail && false\n"})
		err := f.buildErr(good, "Dockerfile: Step 2/4 : RUN echo about to fail && false", "returned a non-zero code: 1", "about to fail")
		var se *StepError
		if !errors.As(err, &se) || se.Step != "Step 2/4 : RUN echo about to fail && false" {
			t.Errorf("error = %#v; want a *StepError naming the step", err)
		}
		if strings.Contains(err.Error(), "Running in") {
			t.Errorf("error = %v; want the engine's bookkeeping left out of the step's output", err)
		}
		f.agent.commit(files{"Dockerfile": agentFiles()["Dockerfile"]})
	})
	t.Run("unreachable with a clone", func(t *testing.T) {
		f.mustBuild() // the clone is at a good commit again
		gone := filepath.Join(t.TempDir(), "gone.git")
		f.cfg.Agents[f.agentID] = config.Agent{Repo: config.Repo{URL: gone, Ref: "main"}}
		defer func() { f.cfg.Agents[f.agentID] = config.Agent{Repo: config.Repo{URL: agentURL, Ref: "main"}} }()
		res, err := f.build()
		if err != nil {
			t.Fatalf("Build() with an unreachable agent repo and a clone = %v; want the stale clone used", err)
		}
		if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], gone) {
			t.Errorf("Warnings = %q; want one naming %s", res.Warnings, gone)
		}
		f.wantLine("warning: agent repo of " + f.agentID)
	})
	t.Run("unreachable without a clone", func(t *testing.T) {
		gone := filepath.Join(t.TempDir(), "gone.git")
		id := "t-" + nonce()
		f.cfg.Agents[id] = config.Agent{Repo: config.Repo{URL: gone}}
		_, err := f.b.Build(f.ctx, f.cfg, id, nil)
		if err == nil || !strings.Contains(err.Error(), "agent repo of "+id) || !strings.Contains(err.Error(), gone) {
			t.Errorf("Build() = %v; want an error naming the repo and %s", err, gone)
		}
		if _, serr := os.Stat(repo.AgentDir(f.b.Home, id)); !os.IsNotExist(serr) {
			t.Errorf("a failed clone left %s", repo.AgentDir(f.b.Home, id))
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		if _, err := f.b.Build(f.ctx, f.cfg, "nobody", nil); err == nil || !strings.Contains(err.Error(), `no agent "nobody"`) {
			t.Errorf("Build(nobody) = %v; want an unknown agent error", err)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		b := *f.b
		b.AgentBinary = filepath.Join(t.TempDir(), "choir-agent")
		if _, err := b.Build(f.ctx, f.cfg, f.agentID, nil); err == nil || !strings.Contains(err.Error(), "choir-agent binary") {
			t.Errorf("Build() without the binary = %v; want an error naming it", err)
		}
	})
}

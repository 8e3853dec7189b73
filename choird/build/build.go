package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/metrics"
)

// Image labels. The lifecycle finds an agent's images by LabelManaged and
// LabelAgent.
const (
	LabelManaged      = "choir.managed"
	LabelAgent        = "choir.agent"
	LabelImageVersion = "choir.image_version"
	LabelGlobalCommit = "choir.global_repo_commit"
	LabelAgentCommit  = "choir.agent_repo_commit"
	LabelBaseImage    = "choir.base_image"
	LabelBase         = "choir.base"
	LabelAgentBinary  = "choir.agent_binary_sha256"
)

// AgentRepo is the repository of agent id's images: choir-agent-<id>.
func AgentRepo(id string) string { return "choir-agent-" + id }

// Builder builds agent images (design §17.3). Its fields are set once;
// Build may be called from several goroutines, and builds run one at a time.
type Builder struct {
	Docker      *docker.Client
	Home        config.Home // the clones live under Home.ReposDir()
	AgentBinary string      // path of the static choir-agent baked into base images
	Records     Records     // where each build is recorded; nil records nothing
	// Secrets returns the running secrets; the MCP servers' pinning is
	// given the ones their declarations name (mcp_secrets.go). Nil: none.
	Secrets func() config.Secrets
	// Publish, when set (the swarm runtime), checks the agent image and
	// makes it runnable on every node (choird/swarm: no setuid file, pushed
	// to the registry) and returns the reference the nodes pull; an error
	// refuses the build: the image is neither recorded nor marked current.
	Publish func(ctx context.Context, image string) (string, error)
}

// Result is a finished build.
type Result struct {
	AgentID      string  `json:"agent_id"`
	Image        string  `json:"image"`    // choir-agent-<id>:<image_version>
	ImageID      string  `json:"image_id"` // sha256:...
	ImageVersion string  `json:"image_version"`
	Version      Version `json:"version"` // /choir/version.json
	BaseImage    string  `json:"base_image"`
	// BaseBuilt and AgentBuilt say whether this build made the images or
	// found them already built from the same inputs. When the agent image
	// was found, the base image was not needed.
	BaseBuilt    bool          `json:"base_built"`
	AgentBuilt   bool          `json:"agent_built"`
	Global       repo.Checkout `json:"global_repo"`
	Agent        repo.Checkout `json:"agent_repo"`
	BinarySHA256 string        `json:"agent_binary_sha256"`
	Tools        []string      `json:"tools"` // repo tools in the image
	Warnings     []string      `json:"warnings,omitempty"`
}

// one lets a single build run at a time: builds share the global clone,
// the base image and two CPUs.
var one = make(chan struct{}, 1)

// Build fetches the global repo and agentID's repo, checks their content,
// and makes the agent's image, building the base image first if needed
// (design §17.3). It never starts or stops an agent. progress, which may be
// nil, receives one human-readable line at a time, warnings included.
//
// A failure leaves earlier clones and images as they were. The error names
// what to fix: an *InvalidError lists faults in the repos' files; a failing
// Dockerfile step is reported with the step, the engine's message and the
// step's output.
func (b *Builder) Build(ctx context.Context, cfg *config.Config, agentID string, progress func(string)) (_ *Result, err error) {
	defer metrics.ImageBuildSeconds.Time(time.Now(), &err)
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	if cfg == nil {
		return nil, errors.New("build: no configuration")
	}
	agent, ok := cfg.Agents[agentID]
	if !ok {
		return nil, fmt.Errorf("build: no agent %q in the configuration", agentID)
	}
	if !config.NamePattern.MatchString(agentID) {
		return nil, fmt.Errorf("build: agent id %q is not a valid name", agentID)
	}
	if b.Docker == nil {
		return nil, errors.New("build: no Docker engine configured")
	}
	select {
	case one <- struct{}{}:
		defer func() { <-one }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	res := &Result{AgentID: agentID}
	warn := func(w string) {
		res.Warnings = append(res.Warnings, w)
		say("warning: %s", w)
	}
	binSHA, err := fileSHA256(b.AgentBinary)
	if err != nil {
		return nil, fmt.Errorf("build: choir-agent binary: %w", err)
	}
	res.BinarySHA256 = binSHA

	gco, err := b.sync(ctx, "global repo", repo.GlobalDir(b.Home), cfg.GlobalRepo, say, warn)
	if err != nil {
		return nil, err
	}
	aco, err := b.sync(ctx, "agent repo of "+agentID, repo.AgentDir(b.Home, agentID), agent.Repo, say, warn)
	if err != nil {
		return nil, err
	}
	res.Global, res.Agent = *gco, *aco

	tmp, err := os.MkdirTemp("", "choir-build-")
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(tmp)
	gsrc, asrc, err := exportSources(ctx, tmp, gco, aco)
	if err != nil {
		return nil, err
	}
	tree, err := check(gsrc, asrc)
	if err != nil {
		return nil, err
	}
	if err := checkSamplingModels(gsrc, asrc, cfg.Models); err != nil {
		return nil, err
	}
	for _, w := range tree.Warnings {
		warn(w)
	}
	res.Tools = tree.Tools

	res.BaseImage = fmt.Sprintf("%s:%s-%s", BaseRepo, gco.Short, binSHA[:12])
	dockerfileSrc, _ := asrc.regular(AgentDockerfile)
	if !usesBase(dockerfileSrc) {
		warn(fmt.Sprintf("%s: %s does not start FROM %s: the image may lack choir-agent", asrc.label, AgentDockerfile, BaseRepo))
	}
	dockerfile := agentDockerfile(dockerfileSrc, res.BaseImage)
	res.ImageVersion = imageVersion(gco.Commit, aco.Commit, tree.ToolHash, tree.SkillHash, binSHA, dockerfile)
	res.Image = AgentRepo(agentID) + ":" + res.ImageVersion
	res.Version = Version{
		AgentID: agentID, ImageVersion: res.ImageVersion,
		GlobalRepoCommit: gco.Commit, AgentRepoCommit: aco.Commit,
		ToolManifestHash: tree.ToolHash, SkillManifestHash: tree.SkillHash,
		MCPSecrets: mcpSecretNames(tree), MCPEndpoints: mcpEndpoints(tree), // mcp.go
	}
	tree.Entries = append(tree.Entries, Entry{Path: "version.json", Mode: 0o644, Body: res.Version.JSON()})

	img, err := b.Docker.ImageInspect(ctx, res.Image)
	reuse := err == nil
	if reuse {
		if reuse, err = b.reusable(ctx, res.Image, img.ID, say); err != nil {
			return nil, err
		}
	}
	switch {
	case reuse:
		res.ImageID = img.ID
		say("agent image %s exists (built from the same commits and binary); not rebuilt", res.Image)
		if res.ImageID, err = b.withMCPPins(ctx, res, cfg, tree, res.ImageID, say); err != nil { // mcp_pin.go
			return nil, err
		}
		if err := b.publish(ctx, res, say); err != nil {
			return nil, err
		}
		if err := b.record(ctx, res, agent); err != nil {
			return nil, err
		}
		if err := b.markCurrent(ctx, res, say); err != nil {
			return nil, err
		}
		return res, nil
	case err != nil && !docker.IsNotFound(err):
		return nil, b.engineError(err)
	}
	if res.BaseBuilt, err = b.ensureBase(ctx, res, gsrc, say); err != nil {
		return nil, err
	}
	say("building %s from %s", res.Image, asrc.label)
	if res.ImageID, err = b.buildAgent(ctx, res, asrc, tree, dockerfile, say); err != nil {
		return nil, err
	}
	if res.ImageID, err = b.withMCPPins(ctx, res, cfg, tree, res.ImageID, say); err != nil { // mcp_pin.go
		return nil, err
	}
	res.AgentBuilt = true
	say("built %s", res.Image)
	if err := b.publish(ctx, res, say); err != nil {
		return nil, err
	}
	if err := b.record(ctx, res, agent); err != nil {
		return nil, err
	}
	if err := b.markCurrent(ctx, res, say); err != nil {
		return nil, err
	}
	return res, nil
}

// publish runs Publish on the agent image, if set.
func (b *Builder) publish(ctx context.Context, res *Result, say func(string, ...any)) error {
	if b.Publish == nil {
		return nil
	}
	ref, err := b.Publish(ctx, res.Image)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	say("published %s as %s", res.Image, ref)
	return nil
}

// sync fetches one repo, reporting progress and warnings.
func (b *Builder) sync(ctx context.Context, name, dir string, r config.Repo, say func(string, ...any), warn func(string)) (*repo.Checkout, error) {
	ref := r.Ref
	if ref == "" {
		ref = "its default branch"
	}
	say("fetching %s %s (%s)", name, repo.Redact(r.URL), ref)
	co, err := repo.Sync(ctx, name, dir, r)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if co.Warning != "" {
		warn(co.Warning)
	}
	say("%s at %s", name, co.Short)
	return co, nil
}

// exportSources writes both commits' trees under tmp and loads them.
func exportSources(ctx context.Context, tmp string, gco, aco *repo.Checkout) (*source, *source, error) {
	var srcs [2]*source
	for i, co := range []*repo.Checkout{gco, aco} {
		dir := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("build: %w", err)
		}
		if err := repo.Export(ctx, co.Dir, co.Commit, dir); err != nil {
			return nil, nil, fmt.Errorf("build: %s (%s): %w", co.Name, co.URL, err)
		}
		label := fmt.Sprintf("%s (%s)", co.Name, co.URL)
		if i == 0 {
			srcs[i] = loadSource(label, dir, co.Commit, BaseDockerfile, UserFile)
		} else {
			srcs[i] = loadSource(label, dir, co.Commit, AgentDockerfile)
		}
	}
	return srcs[0], srcs[1], nil
}

// check merges the two repos and validates everything the build can
// check before the engine sees it.
func check(global, agent *source) (*Tree, error) {
	tree := merge(global, agent)
	known := tree.knownTools()
	global.validateSkills(known)
	agent.validateSkills(known)
	if faults := append(global.faults, agent.faults...); len(faults) > 0 {
		return nil, &InvalidError{Faults: faults}
	}
	return tree, nil
}

func fileSHA256(path string) (string, error) {
	if path == "" {
		return "", errors.New("no path set (Builder.AgentBinary)")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

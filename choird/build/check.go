package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/docker"
)

// Content is what an agent image is made of, or would be: the commits of
// both repos and a fingerprint of every file of theirs that goes into the
// image (`config load` and `config diff` compare two of them, §17.6).
type Content struct {
	Global repo.Checkout `json:"global_repo"`
	Agent  repo.Checkout `json:"agent_repo"`
	// Files maps "<repo>:<path>" ("global:tools/acme.wc.json",
	// "agent-1:identity/SOUL.md") to the SHA-256 of the file's content (of
	// a symlink: of its target path), for the Dockerfiles and everything
	// under tools/, skills/, mcp/ and identity/.
	Files    map[string]string `json:"files"`
	Warnings []string          `json:"warnings,omitempty"`
}

// Check fetches both repos of agentID and checks them as Build does (tool
// and skill files against the built-in registry and each other, the
// Dockerfiles present, source directories for compiled tools), without
// building anything. The error is an *InvalidError when a file is wrong.
func (b *Builder) Check(ctx context.Context, cfg *config.Config, agentID string, progress func(string)) (*Content, error) {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	if cfg == nil {
		return nil, errors.New("check: no configuration")
	}
	agent, ok := cfg.Agents[agentID]
	if !ok {
		return nil, fmt.Errorf("check: no agent %q in the configuration", agentID)
	}
	c := &Content{}
	warn := func(w string) {
		c.Warnings = append(c.Warnings, w)
		say("warning: %s", w)
	}
	gco, err := b.sync(ctx, "global repo", repo.GlobalDir(b.Home), cfg.GlobalRepo, say, warn)
	if err != nil {
		return nil, err
	}
	aco, err := b.sync(ctx, "agent repo of "+agentID, repo.AgentDir(b.Home, agentID), agent.Repo, say, warn)
	if err != nil {
		return nil, err
	}
	if err := b.content(ctx, c, agentID, gco, aco, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// ImageContent is the content of image, an image of agentID this builder
// made, read from its labels' commits in the local clones (nothing is
// fetched). It is nil, with no error, when there is no such image.
func (b *Builder) ImageContent(ctx context.Context, agentID, image string) (*Content, error) {
	img, err := b.Docker.ImageInspect(ctx, image)
	if docker.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, b.engineError(err)
	}
	var labels map[string]string
	if img.Config != nil {
		labels = img.Config.Labels
	}
	g, a := labels[LabelGlobalCommit], labels[LabelAgentCommit]
	if g == "" || a == "" {
		return nil, fmt.Errorf("image %s has no %s and %s labels: it was not built by choird", image, LabelGlobalCommit, LabelAgentCommit)
	}
	gco := &repo.Checkout{Name: "global repo", Dir: repo.GlobalDir(b.Home), Commit: g, Short: short(g)}
	aco := &repo.Checkout{Name: "agent repo of " + agentID, Dir: repo.AgentDir(b.Home, agentID), Commit: a, Short: short(a)}
	c := &Content{}
	if err := b.content(ctx, c, agentID, gco, aco, nil); err != nil {
		return nil, err
	}
	return c, nil
}

func short(commit string) string {
	if len(commit) > repo.ShortLen {
		return commit[:repo.ShortLen]
	}
	return commit
}

// content exports both commits, checks them (against cfg's models too)
// when cfg is not nil, and fingerprints their files into c.
func (b *Builder) content(ctx context.Context, c *Content, agentID string, gco, aco *repo.Checkout, cfg *config.Config) error {
	c.Global, c.Agent = *gco, *aco
	tmp, err := os.MkdirTemp("", "choir-check-")
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(tmp)
	gsrc, asrc, err := exportSources(ctx, tmp, gco, aco)
	if err != nil {
		return err
	}
	if cfg != nil {
		tree, err := check(gsrc, asrc)
		if err != nil {
			return err
		}
		if err := checkSamplingModels(gsrc, asrc, cfg.Models); err != nil {
			return err
		}
		c.Warnings = append(c.Warnings, tree.Warnings...)
	}
	c.Files = map[string]string{}
	for prefix, src := range map[string]*source{"global": gsrc, agentID: asrc} {
		if err := fingerprint(src.dir, prefix, c.Files); err != nil {
			return fmt.Errorf("check: %s: %w", src.label, err)
		}
	}
	return nil
}

// fingerprint adds the image-relevant files of the tree at dir to files.
func fingerprint(dir, prefix string, files map[string]string) error {
	root := os.DirFS(dir)
	return fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		top, _, _ := strings.Cut(p, "/")
		switch {
		case p == ".":
			return nil
		case d.IsDir() && (top == ToolsDir || top == SkillsDir || top == MCPDir || top == "identity"):
			return nil
		case d.IsDir():
			return fs.SkipDir
		case p != BaseDockerfile && p != AgentDockerfile && p == top:
			return nil // another file at the top
		}
		h := sha256.New()
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				return err
			}
			h.Write([]byte("symlink:" + target))
		} else {
			data, err := fs.ReadFile(root, p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		files[prefix+":"+path.Clean(p)] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
}

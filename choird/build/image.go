package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"choir/internal/docker"
)

// ensureBase makes sure the base image res.BaseImage exists, building it
// from the global repo's Dockerfile.base with choir-agent at the root of
// the context, and points choir-base:latest at it. It reports whether it
// built the image.
func (b *Builder) ensureBase(ctx context.Context, res *Result, global *source, say func(string, ...any)) (bool, error) {
	_, err := b.Docker.ImageInspect(ctx, res.BaseImage)
	switch {
	case err == nil:
		say("base image %s (cached)", res.BaseImage)
		if err := b.Docker.ImageTag(ctx, res.BaseImage, BaseLatest); err != nil {
			return false, b.engineError(err)
		}
		return false, nil
	case !docker.IsNotFound(err):
		return false, b.engineError(err)
	}
	say("building base image %s from %s %s", res.BaseImage, global.label, BaseDockerfile)
	src, err := global.regular(BaseDockerfile)
	if err != nil {
		return false, fmt.Errorf("build: %s: %s: %w", global.label, BaseDockerfile, err)
	}
	dockerfile := withLabels(src, map[string]string{
		LabelManaged: "true", LabelBase: "true",
		LabelGlobalCommit: global.commit, LabelAgentBinary: res.BinarySHA256,
	})
	body := func(c *contextWriter) error {
		if err := c.tree(global.dir, func(rel string) bool { return rel == "choir-agent" || rel == BaseDockerfile }); err != nil {
			return err
		}
		if err := c.file(BaseDockerfile, 0o644, dockerfile); err != nil {
			return err
		}
		return c.copyFile("choir-agent", 0o755, b.AgentBinary)
	}
	opts := docker.BuildOptions{Tags: []string{res.BaseImage, BaseLatest}, Dockerfile: BaseDockerfile}
	if _, err := b.build(ctx, "base", body, opts, say); err != nil {
		return false, b.buildError(err, "base image "+res.BaseImage, global.label, BaseDockerfile)
	}
	say("built base image %s", res.BaseImage)
	return true, nil
}

// buildAgent builds the agent image: the agent repo with the merged tree
// under .choir/ and the generated Dockerfile in place of its own, plus a
// LABEL instruction with the image's labels (all derived from what the
// image version already covers).
func (b *Builder) buildAgent(ctx context.Context, res *Result, agent *source, tree *Tree, dockerfile []byte, say func(string, ...any)) (string, error) {
	dockerfile = withLabels(dockerfile, map[string]string{
		LabelManaged: "true", LabelAgent: res.AgentID, LabelImageVersion: res.ImageVersion,
		LabelGlobalCommit: res.Version.GlobalRepoCommit, LabelAgentCommit: res.Version.AgentRepoCommit,
		LabelBaseImage: res.BaseImage,
	})
	body := func(c *contextWriter) error {
		if err := c.tree(agent.dir, func(rel string) bool {
			return rel == AgentDockerfile || rel == choirDir || strings.HasPrefix(rel, choirDir+"/")
		}); err != nil {
			return err
		}
		if err := c.file(AgentDockerfile, 0o644, dockerfile); err != nil {
			return err
		}
		for _, e := range tree.Entries {
			if err := c.file(path.Join(choirDir, e.Path), e.Mode, e.Body); err != nil {
				return err
			}
		}
		return nil
	}
	opts := docker.BuildOptions{Tags: []string{res.Image}, Dockerfile: AgentDockerfile}
	id, err := b.build(ctx, "agent", body, opts, say)
	if err != nil {
		return "", b.buildError(err, "agent image "+res.Image, agent.label, AgentDockerfile)
	}
	return id, nil
}

// markCurrent tags the image choir-agent-<id>:latest, the tag the
// lifecycle starts: the image of the last successful build, whether it was
// built now or reused (a ref moved back to an earlier commit).
func (b *Builder) markCurrent(ctx context.Context, res *Result, say func(string, ...any)) error {
	latest := AgentRepo(res.AgentID) + ":latest"
	if err := b.Docker.ImageTag(ctx, res.Image, latest); err != nil {
		return fmt.Errorf("build: tag %s as %s: %w", res.Image, latest, b.engineError(err))
	}
	say("%s is now %s", latest, res.Image)
	return nil
}

// build streams the context body writes to the engine and runs the build,
// passing each output line of the steps to say.
func (b *Builder) build(ctx context.Context, what string, body func(*contextWriter) error, opts docker.BuildOptions, say func(string, ...any)) (string, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := newContextWriter(pw)
		err := body(c)
		if err == nil {
			err = c.Close()
		}
		pw.CloseWithError(err)
	}()
	var partial string
	opts.ForceRemove = true
	opts.Progress = func(m docker.JSONMessage) {
		if m.Stream == "" {
			return
		}
		lines := strings.Split(partial+m.Stream, "\n")
		partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			if l = strings.TrimRight(l, "\r "); showLine(l) {
				say("%s: %s", what, l)
			}
		}
	}
	res, err := b.Docker.ImageBuild(ctx, pr, opts)
	pr.CloseWithError(errors.New("build ended"))
	<-done
	if partial != "" && showLine(partial) {
		say("%s: %s", what, partial)
	}
	if err != nil {
		return "", err
	}
	return res.ImageID, nil
}

// showLine keeps the steps and what they print, not the engine's
// bookkeeping.
func showLine(l string) bool {
	t := strings.TrimSpace(l)
	switch {
	case t == "---> Using cache":
		return true
	case t == "", strings.HasPrefix(t, "---> "), strings.HasPrefix(t, "Removing intermediate container"),
		strings.HasPrefix(t, "Successfully built"), strings.HasPrefix(t, "Successfully tagged"):
		return false
	}
	return true
}

// buildError turns the engine's refusal into an error that says which
// image, which repo and file, and which step.
func (b *Builder) buildError(err error, image, repoLabel, file string) error {
	var be *docker.BuildError
	if errors.As(err, &be) {
		msg := fmt.Sprintf("build: %s failed: %s %s", image, repoLabel, file)
		if be.Step != "" {
			msg += ": " + be.Step
		}
		msg += ": " + be.Message
		if out := stepOutput(be.Output); out != "" {
			msg += "\noutput of the step:\n" + out
		}
		return &StepError{Image: image, Repo: repoLabel, File: file, Step: be.Step, Message: be.Message, Output: stepOutput(be.Output), msg: msg, err: err}
	}
	if docker.IsBadRequest(err) {
		return fmt.Errorf("build: %s: the engine refused %s %s: %w", image, repoLabel, file, err)
	}
	return fmt.Errorf("build: %s: %w", image, b.engineError(err))
}

// stepOutput is what a step printed, without the engine's bookkeeping.
func stepOutput(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if showLine(l) {
			keep = append(keep, strings.TrimRight(l, "\r "))
		}
	}
	return strings.Join(keep, "\n")
}

// StepError is a Dockerfile step that failed.
type StepError struct {
	Image   string // "agent image choir-agent-agent-1:..."
	Repo    string // the repo whose Dockerfile it is
	File    string // Dockerfile or Dockerfile.base
	Step    string // "Step 3/5 : RUN make"
	Message string // the engine's message
	Output  string // what the step printed (the end of it)
	msg     string
	err     error
}

func (e *StepError) Error() string { return e.msg }
func (e *StepError) Unwrap() error { return e.err }

// engineError marks errors that are not the engine's answer (a socket that
// does not answer) as such.
func (b *Builder) engineError(err error) error {
	var ae *docker.APIError
	var be *docker.BuildError
	if errors.As(err, &ae) || errors.As(err, &be) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("docker engine at %s: %w", b.Docker.Host(), err)
}

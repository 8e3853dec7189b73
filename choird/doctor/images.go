package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"choir/choird/build"
	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/docker"
)

// imageChecks are one check per configured agent's image.
func (d *Doctor) imageChecks() []Check {
	l := d.getLoaded()
	if l == nil {
		return []Check{{"agent images", func(context.Context) Result { return skip("needs a valid config (see the config line)") }}}
	}
	ids := config.SortedNames(l.Config.Agents)
	if len(ids) == 0 {
		return []Check{{"agent images", func(context.Context) Result {
			return skip("no agent is configured (choirctl agent init <id> scaffolds one)")
		}}}
	}
	checks := make([]Check, len(ids))
	for i, id := range ids {
		checks[i] = Check{"agent image " + id, func(ctx context.Context) Result { return d.checkAgentImage(ctx, l.Config, id) }}
	}
	return checks
}

// checkBaseImage checks choir-base:latest, the newest base image built,
// against the global repo's head. A missing base is a warning: agent images
// hold their layers, and the next build makes it.
func (d *Doctor) checkBaseImage(ctx context.Context) Result {
	c := d.getEngine()
	if c == nil {
		return skip("the Docker engine did not answer")
	}
	img, err := c.ImageInspect(ctx, build.BaseLatest)
	if docker.IsNotFound(err) {
		return bad(Warn, "`choirctl agent build <id>` builds it from the global repo's Dockerfile.base (its packages need a network or a local Debian image)",
			"no %s on the engine: no agent image has been built yet, or it was removed", build.BaseLatest)
	}
	if err != nil {
		return bad(Fail, "check dockerd's log", "inspect %s: %v", build.BaseLatest, err)
	}
	detail := fmt.Sprintf("%s (%s, built %s)", build.BaseLatest, shortID(img.ID), d.age(img.Created))
	l := d.getLoaded()
	if l == nil {
		return ok("%s; its global repo commit not compared (no valid config)", detail)
	}
	commit := label(img, build.LabelGlobalCommit)
	if commit == "" {
		return bad(Warn, "`choirctl agent build <id>` builds a base of choird's own", "%s has no %s label: it was not built by choird", detail, build.LabelGlobalCommit)
	}
	return d.compareHeads(ctx, detail, "the next `choirctl agent build <id>` builds a new base",
		[]repoAt{{"global repo", l.Config.GlobalRepo, commit}})
}

// checkAgentImage checks choir-agent-<id>:latest, the image the lifecycle
// starts: present, and built from the heads of the global repo and the
// agent's repo.
func (d *Doctor) checkAgentImage(ctx context.Context, cfg *config.Config, id string) Result {
	c := d.getEngine()
	if c == nil {
		return skip("the Docker engine did not answer")
	}
	ref := build.AgentRepo(id) + ":latest"
	fix := "run `choirctl agent build " + id + "`"
	img, err := c.ImageInspect(ctx, ref)
	if docker.IsNotFound(err) {
		return bad(Fail, fix, "no image %s: the agent cannot start", ref)
	}
	if err != nil {
		return bad(Fail, "check dockerd's log", "inspect %s: %v", ref, err)
	}
	detail := fmt.Sprintf("%s (version %s, %s, built %s)", ref, orDash(label(img, build.LabelImageVersion)), shortID(img.ID), d.age(img.Created))
	global, agent := label(img, build.LabelGlobalCommit), label(img, build.LabelAgentCommit)
	if global == "" || agent == "" {
		return bad(Warn, fix, "%s has no commit labels: it was not built by choird, and a start refuses an image choird has no record of", detail)
	}
	return d.compareHeads(ctx, detail, fix, []repoAt{
		{"global repo", cfg.GlobalRepo, global},
		{"agent repo", cfg.Agents[id].Repo, agent},
	})
}

// repoAt is a repository and the commit an image was built from.
type repoAt struct {
	name   string
	repo   config.Repo
	commit string
}

// compareHeads asks each repository for the head of its ref and says
// whether the image was built from it.
// A remote that does not answer is reported before the check's deadline,
// as a warning: the image itself was found.
func (d *Doctor) compareHeads(ctx context.Context, detail, fix string, repos []repoAt) Result {
	ctx, cancel := context.WithTimeout(ctx, d.inner())
	defer cancel()
	var behind, unknown []string
	for _, r := range repos {
		head, err := repo.Head(ctx, r.repo)
		switch {
		case errors.Is(err, repo.ErrPinned):
			if !strings.HasPrefix(r.commit, strings.ToLower(r.repo.Ref)) {
				behind = append(behind, fmt.Sprintf("%s is pinned to %s, the image has %s", r.name, r.repo.Ref, short(r.commit)))
			}
		case ctx.Err() != nil:
			unknown = append(unknown, fmt.Sprintf("%s (%s): no answer within %s", r.name, repo.Redact(r.repo.URL), d.inner()))
		case err != nil:
			unknown = append(unknown, fmt.Sprintf("%s (%s): %s", r.name, repo.Redact(r.repo.URL), oneLine(err.Error())))
		case head != r.commit:
			behind = append(behind, fmt.Sprintf("%s %s is at %s, the image has %s", r.name, refName(r.repo.Ref), short(head), short(r.commit)))
		}
	}
	switch {
	case len(behind) > 0:
		return bad(Warn, fix, "%s is not built from its repos' heads: %s", detail, strings.Join(behind, "; "))
	case len(unknown) > 0:
		return bad(Warn, "check the repository's URL and that choird's user may read it (ssh keys, known_hosts)",
			"%s; could not ask for the head of the %s", detail, strings.Join(unknown, "; "))
	}
	return ok("%s, built from its repos' heads", detail)
}

func label(img docker.Image, key string) string {
	if img.Config == nil {
		return ""
	}
	return img.Config.Labels[key]
}

func refName(ref string) string {
	if ref == "" {
		return "default branch"
	}
	return ref
}

func short(sha string) string {
	if len(sha) > repo.ShortLen {
		return sha[:repo.ShortLen]
	}
	return sha
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age says how long ago t was, for people.
func (d *Doctor) age(t time.Time) string {
	a := d.now().Sub(t)
	switch {
	case t.IsZero():
		return "at an unknown time"
	case a < time.Minute:
		return "just now"
	case a < time.Hour:
		return fmt.Sprintf("%d minutes ago", int(a.Minutes()))
	case a < 48*time.Hour:
		return fmt.Sprintf("%d hours ago", int(a.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(a.Hours()/24))
}

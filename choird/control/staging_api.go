package control

import (
	"context"
	"net/http"
	"strings"

	"choir/choird/build"
	"choir/choird/staging"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// SetChecker connects what `config load` checks repos and reads images
// with (the image builder).
func (p *Plane) SetChecker(c staging.Checker) {
	p.mu.Lock()
	p.checker = c
	p.mu.Unlock()
}

// LoadConfig is `config load` (§17.6): .choir.d/ read, validated and
// checked as one snapshot and staged, or nothing staged. It answers the
// diff against the running snapshot.
func (p *Plane) LoadConfig(ctx context.Context) (ctl.ConfigDiff, error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.mu.RLock()
	chk, base := p.checker, p.loaded
	p.mu.RUnlock()
	if chk == nil || base == nil {
		return ctl.ConfigDiff{}, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "choird has not finished starting; try again")
	}
	snap, err := staging.Load(ctx, p.home, chk, nil)
	if err != nil {
		// An older staged snapshot goes too: a later apply must never
		// publish something the operator has since replaced on disk.
		p.mu.Lock()
		p.staged, p.stagedOver = nil, nil
		p.mu.Unlock()
		return ctl.ConfigDiff{}, ctl.Errorf(http.StatusUnprocessableEntity, "invalid", "%v", err)
	}
	p.mu.Lock()
	p.staged, p.stagedOver = snap, base
	p.mu.Unlock()
	p.log.Info("configuration staged", "config_hash", snap.Loaded.Version, "agents", len(snap.Repos), "warnings", len(snap.Warnings))
	return p.diffConfig(ctx)
}

// DiffConfig is `config diff`: the staged snapshot against the running one.
func (p *Plane) DiffConfig(ctx context.Context) (ctl.ConfigDiff, error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	return p.diffConfig(ctx)
}

func (p *Plane) diffConfig(ctx context.Context) (ctl.ConfigDiff, error) {
	p.mu.RLock()
	snap, running, version, chk, agents := p.staged, p.loaded, p.configVersion, p.checker, p.agents
	p.mu.RUnlock()
	d := ctl.ConfigDiff{RunningVersion: version, Changes: []ctl.ConfigChange{}}
	if running != nil {
		d.RunningHash = running.Version
	}
	if snap == nil {
		return d, nil
	}
	d.Staged, d.StagedAt, d.StagedHash = true, snap.At, snap.Loaded.Version
	d.Warnings = append(d.Warnings, snap.Warnings...)
	runningNow := map[string]ctl.AgentStatus{}
	var holders []staging.Holder
	if agents != nil {
		for _, st := range agents.List() {
			if st.State != "stopped" && st.Bindings != nil {
				runningNow[st.AgentID] = st
				holders = append(holders, staging.Holder{AgentID: st.AgentID, Bindings: *st.Bindings})
			}
		}
	}
	d.Changes = append(d.Changes, staging.ConfigChanges(running.Config, snap.Loaded.Config, holders)...)
	d.Changes = append(d.Changes, staging.SecretChanges(running.Secrets, snap.Loaded.Secrets)...)
	var images []staging.Image
	for _, id := range config.SortedNames(snap.Repos) {
		img := staging.Image{AgentID: id}
		ref := build.AgentRepo(id) + ":latest"
		if st, ok := runningNow[id]; ok && st.Image != "" {
			img.Running, ref = true, st.Image
		}
		c, err := chk.ImageContent(ctx, id, ref)
		if err != nil {
			d.Warnings = append(d.Warnings, "cannot read what agent "+id+"'s image "+ref+" holds: "+err.Error())
			continue
		}
		img.Content = c
		images = append(images, img)
	}
	d.Changes = append(d.Changes, staging.RepoChanges(images, snap.Repos)...)
	d.Applicable = true
	for _, c := range d.Changes {
		if c.Blocks != "" && !repoChange(c) {
			d.Applicable = false
		}
	}
	return d, nil
}

// repoChange tells the repo lines (applied by agent build/update) from the
// config.json and secrets.json ones.
func repoChange(c ctl.ConfigChange) bool {
	return !strings.HasPrefix(c.Where, "config.json: ") && !strings.HasPrefix(c.Where, "secrets.json: ")
}

// ApplyConfig is `config apply`: the staged config.json and secrets.json
// become the running ones at once and running agents are told, when no
// change blocks it; otherwise nothing changes and the error lists what
// blocks, with what to do.
func (p *Plane) ApplyConfig(ctx context.Context) (ctl.ConfigApplied, error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.mu.RLock()
	snap, over, cur := p.staged, p.stagedOver, p.loaded
	p.mu.RUnlock()
	switch {
	case snap == nil:
		return ctl.ConfigApplied{}, ctl.Errorf(http.StatusConflict, "nothing_staged", "nothing is staged: run choirctl config load first")
	case cur != over:
		return ctl.ConfigApplied{}, ctl.Errorf(http.StatusConflict, "stale",
			"the running configuration changed since config load (a secret apply or another config apply); run choirctl config load again")
	}
	d, err := p.diffConfig(ctx)
	if err != nil {
		return ctl.ConfigApplied{}, err
	}
	var res ctl.ConfigApplied
	var blocks []string
	secrets := false
	for _, c := range d.Changes {
		switch {
		case repoChange(c):
			res.Pending = append(res.Pending, c)
		case c.Blocks != "":
			blocks = append(blocks, c.Op+" "+c.Where+": "+c.Blocks)
		default:
			res.Published++
			secrets = secrets || strings.HasPrefix(c.Where, "secrets.json: ")
		}
	}
	if len(blocks) > 0 {
		return ctl.ConfigApplied{}, ctl.Errorf(http.StatusConflict, "restart_required",
			"nothing applied; the staged configuration has changes config apply cannot make now:\n  %s", strings.Join(blocks, "\n  "))
	}
	if res.Published == 0 {
		res.ConfigVersion = p.configVersionNow()
		return res, nil
	}
	res.ConfigVersion = p.install(snap.Loaded)
	p.mu.Lock()
	p.stagedOver = snap.Loaded // the staged snapshot is now the running one
	agents := p.agents
	p.mu.Unlock()
	if agents != nil {
		res.AgentsNotified = agents.Broadcast(rpc.EventConfigChanged, map[string]int64{"config_version": res.ConfigVersion})
		if secrets {
			agents.Broadcast(rpc.EventSecretsChanged, struct{}{})
		}
	}
	p.versionChanged(res.ConfigVersion, "configuration applied", "config_hash", snap.Loaded.Version,
		"changes", res.Published, "agents_notified", res.AgentsNotified, "pending", len(res.Pending))
	return res, nil
}

func (p *Plane) registerStagingRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/config/load", func(w http.ResponseWriter, r *http.Request) {
		d, err := p.LoadConfig(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("GET /v1/config/diff", func(w http.ResponseWriter, r *http.Request) {
		d, err := p.DiffConfig(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("POST /v1/config/apply", func(w http.ResponseWriter, r *http.Request) {
		res, err := p.ApplyConfig(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, res)
	})
}

package control

import (
	"net/http"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// ApplySecrets is `choirctl secret apply`: reload secrets.json, check the
// running configuration against it (a secret it names must not vanish), swap
// the secrets in at once, and tell every running agent to fetch its secrets
// again. Nothing changes when the check fails.
func (p *Plane) ApplySecrets() (ctl.SecretsApplied, error) {
	secrets, err := config.LoadSecrets(p.home)
	if err != nil {
		return ctl.SecretsApplied{}, ctl.Errorf(http.StatusUnprocessableEntity, "invalid", "%v", err)
	}
	p.mu.Lock()
	cur := p.loaded
	if cur == nil {
		p.mu.Unlock()
		return ctl.SecretsApplied{}, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "no configuration loaded yet")
	}
	if err := config.Validate(cur.Config, secrets); err != nil {
		p.mu.Unlock()
		return ctl.SecretsApplied{}, ctl.Errorf(http.StatusUnprocessableEntity, "invalid", "secrets.json does not fit the running configuration; nothing applied:\n%v", err)
	}
	next := *cur
	next.Secrets = secrets
	p.loaded = &next
	// A new version too: an agent that missed the push notices at its next
	// heartbeat and fetches its config and secrets again.
	p.configVersion++
	agents := p.agents
	p.mu.Unlock()
	p.logs.Redactor.Set(secretValues(secrets))
	res := ctl.SecretsApplied{Secrets: len(secrets), ConfigVersion: p.configVersionNow()}
	if agents != nil {
		res.AgentsNotified = agents.Broadcast(rpc.EventSecretsChanged, struct{}{})
	}
	p.versionChanged(res.ConfigVersion, "secrets applied", "secrets", res.Secrets, "agents_notified", res.AgentsNotified)
	return res, nil
}

func (p *Plane) configVersionNow() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.configVersion
}

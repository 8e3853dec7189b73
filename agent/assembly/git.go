package assembly

import (
	"fmt"
	"os"

	"choir/agent/gitident"
	"choir/agent/sandbox"
	"choir/agent/tool"
	"choir/internal/gitcred"
)

// startGit serves the session's git identity (§14.4) in cfg.GitDir before
// any tool runs, and points tool processes' git at its config. Without it
// git still works, without identity or credentials: the log says why.
func (rt *Runtime) startGit() {
	if rt.cfg.GitDir == "" {
		return
	}
	svc, err := gitident.Start(rt.cfg.GitDir, rt.cfg.GitHelper, rt.gitIdentity, rt.log.With("system", "git"))
	if err != nil {
		rt.log.Error("git identity unavailable: git runs without user.name, user.email or credentials", "error", err.Error())
		return
	}
	sandbox.SetToolEnv(gitident.EnvConfig + "=" + svc.ConfigPath())
	if _, err := os.Stat(rt.cfg.GitHelper); err != nil {
		rt.log.Warn("git has no credential helper: add `RUN ln -s choir-agent /choir/bin/git-cred-helper` to Dockerfile.base", "error", err.Error())
	}
	if sb := sandbox.Current(); sb != nil && !gitident.HasPasswdEntry("/etc/passwd", sb.UID) {
		rt.log.Warn(fmt.Sprintf("ssh refuses to run for uid %d, the workspace's owner, which has no entry in the image's /etc/passwd: git over SSH fails until Dockerfile.base adds one (RUN useradd --uid %d --home-dir /tmp --no-create-home choir)", sb.UID, sb.UID))
	}
	rt.mu.Lock()
	rt.git = svc
	rt.mu.Unlock()
}

// refreshGit rewrites the git identity's files after a config change.
func (rt *Runtime) refreshGit() {
	rt.mu.Lock()
	svc := rt.git
	rt.mu.Unlock()
	if svc == nil {
		return
	}
	if err := svc.Refresh(); err != nil {
		rt.log.Error("git identity not updated", "error", err.Error())
	}
}

func (rt *Runtime) stopGit() {
	rt.mu.Lock()
	svc := rt.git
	rt.git = nil
	rt.mu.Unlock()
	if svc != nil {
		svc.Close()
	}
}

// gitIdentity is the session's git identity now: its settings from the
// dynamic config, its secret from what choird granted.
func (rt *Runtime) gitIdentity() (gitident.Identity, error) {
	d := rt.dynamic()
	name := rt.sess.Bindings.GitIdentity
	if d.GitIdentity == nil {
		return gitident.Identity{}, fmt.Errorf("no git identity is bound in this session (set git_identity in the agent's defaults in config.json, or start it with --git-identity=NAME)")
	}
	g := *d.GitIdentity
	id := gitident.Identity{Binding: name, Name: g.Name, Email: g.Email, Username: g.HTTPSUsername()}
	for i, h := range g.AllowedHosts() {
		p, err := gitcred.ParseHost(h)
		if err != nil { // config validation refuses it first
			return gitident.Identity{}, fmt.Errorf("git_identities.%s.hosts[%d] %q: %v", name, i, h, err)
		}
		id.Hosts = append(id.Hosts, p)
	}
	secret, err := rt.secret(tool.SecretGitIdentity)
	if err != nil {
		id.NoSecret = err.Error()
	}
	id.Secret = secret
	return id, nil
}

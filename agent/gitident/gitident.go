// Package gitident gives the tools of an agent's container the session's
// git identity (design §14.4; DESIGN.md "Git identity").
//
// The container's root file system is read-only and its /run a tmpfs, so
// the identity lives in Dir (/run/choir-git), which choir-agent makes at
// the start of each session and rewrites when the dynamic config changes,
// as root (sandbox.AsRoot): tools can read the files and connect to the
// socket, not change them.
//
//   - gitconfig: user.name and user.email of the identity, credential.helper
//     (git-cred-helper, the only helper) and core.sshCommand
//     (git-cred-helper ssh). Tool processes get GIT_CONFIG_SYSTEM pointing
//     at it (a path, never a value); it includes the image's /etc/gitconfig
//     first. Nothing is written to the workspace, the environment or any
//     .git/config.
//   - ssh_config: the ssh-agent's socket for the identity's hosts only
//     (IdentityAgent none for every other host).
//   - cred.sock: choir-agent's answer to git-cred-helper.
//   - ssh/agent.sock: an ssh-agent holding the identity's SSH key, started
//     when git first connects to an allowed host over SSH and loaded with
//     `ssh-add -` from memory; the sandbox's sweep ends it with the tool
//     call, and the next one starts it again.
//
// # The helper's protocol (cred.sock)
//
// One request per connection: a verb line, then attribute lines in git's
// credential format (package gitcred), then a blank line.
//
//	get  protocol=https host=NAME[:PORT] ...   git's own request
//	ssh  protocol=ssh   host=NAME:PORT          before git's ssh connects
//
// The answer is "ok\n" followed, for get, by username= and password= and a
// blank line; or "refused REASON\n". choir-agent answers get only for
// protocol https and a host of the identity's hosts (port 443 unless
// named), and only when the identity's secret is a token; ssh only for an
// allowed host and an SSH key.
//
// # Threat model
//
// Tool processes run as the workspace's owner without any secret; the
// socket is theirs to use. A prompt-injected model with a shell can do
// everything git can: ask cred.sock for the token of an allowed host (and
// so read the token), and, while the ssh-agent runs, have it sign for any
// host it connects to. It cannot get: the token for any other host or
// protocol, which is what keeps git (tricked by a remote URL, a submodule
// or a redirect) from sending the token elsewhere; any other secret of the
// session; the SSH private key's bytes (ssh-agent is non-dumpable, and the
// key only passes through a pipe into `ssh-add -`); or a key offered by
// git's ssh to a host that is not allowed.
package gitident

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"choir/agent/sandbox"
	"choir/internal/gitcred"
)

// Where things are.
const (
	// Dir holds the identity's files in the container (a tmpfs).
	Dir = "/run/choir-git"
	// HelperName is argv[0]'s base name that makes choir-agent the helper.
	HelperName = "git-cred-helper"
	// EnvConfig names the git config file of tool processes.
	EnvConfig = "GIT_CONFIG_SYSTEM"

	configName   = "gitconfig"
	sshConfig    = "ssh_config"
	socketName   = "cred.sock"
	sshDir       = "ssh"
	sshAgentSock = "agent.sock"
)

// Identity is the session's git identity now.
type Identity struct {
	Binding     string // its name in config.json, for messages
	Name, Email string
	Username    string // with a token over HTTPS
	Hosts       []gitcred.Host
	Secret      string // a token or an SSH private key (PEM)
	// NoSecret says why Secret is empty (choird has not granted it).
	NoSecret string
}

// SSHKey says whether the secret is an SSH private key.
func (id Identity) SSHKey() bool {
	s := strings.TrimSpace(id.Secret)
	return strings.HasPrefix(s, "-----BEGIN ") && strings.Contains(s, "PRIVATE KEY-----")
}

// Source returns the session's identity now; an error says why there is
// none (no identity bound).
type Source func() (Identity, error)

// Service is the git identity of one session.
type Service struct {
	dir    string
	helper string
	source Source
	log    *slog.Logger
	ln     net.Listener
	ssh    *sshAgent
	wg     sync.WaitGroup

	mu      sync.Mutex
	written map[string]string // file name: content last written
}

// Start makes dir, serves the helper's socket in it and writes the git
// and SSH configuration of source's identity. helper is the path of
// git-cred-helper (a link to choir-agent). Close stops it.
func Start(dir, helper string, source Source, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sock := filepath.Join(dir, socketName)
	var ln net.Listener
	// Root's, so that no tool can change the files or the socket; the
	// socket is open to the tools, and ssh/ (sticky) takes ssh-agent's.
	err := sandbox.AsRoot(func() error {
		if err := os.MkdirAll(filepath.Join(dir, sshDir), 0o755); err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
		if err := os.Chmod(filepath.Join(dir, sshDir), 0o1777); err != nil {
			return err
		}
		os.Remove(sock) // a previous session's
		l, err := net.Listen("unix", sock)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", sock, err)
		}
		ln = l
		return os.Chmod(sock, 0o666)
	})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("git identity: %w", err)
	}
	s := &Service{dir: dir, helper: helper, source: source, log: log, ln: ln,
		ssh: &sshAgent{sock: filepath.Join(dir, sshDir, sshAgentSock)}, written: map[string]string{}}
	if err := s.Refresh(); err != nil {
		ln.Close()
		return nil, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serve()
	}()
	return s, nil
}

// Close stops serving and ends the ssh-agent.
func (s *Service) Close() {
	s.ln.Close()
	s.wg.Wait()
	s.ssh.stop()
}

// Refresh rewrites the configuration files when the identity changed.
func (s *Service) Refresh() error {
	id, err := s.source()
	if err != nil {
		id = Identity{} // git runs without an identity; the helper says why
	}
	files := map[string]string{
		configName: gitConfig(id, s.helper, filepath.Join(s.dir, sshConfig)),
		sshConfig:  sshConfigFor(id, s.ssh.sock),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, content := range files {
		if s.written[name] == content {
			continue
		}
		path := filepath.Join(s.dir, name)
		if err := sandbox.AsRoot(func() error { return writeAtomic(path, content) }); err != nil {
			return fmt.Errorf("git identity: %w", err)
		}
		s.written[name] = content
	}
	return nil
}

// ConfigPath is the git config file tool processes read.
func (s *Service) ConfigPath() string { return filepath.Join(s.dir, configName) }

func writeAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// gitConfig is the system git config of tool processes.
func gitConfig(id Identity, helper, sshCfg string) string {
	var b strings.Builder
	b.WriteString("# Written by choir-agent for the session's git identity (design §14.4);\n# rewritten when it changes. Tools read it through " + EnvConfig + ".\n")
	b.WriteString("[include]\n\tpath = /etc/gitconfig\n")
	if id.Name != "" || id.Email != "" {
		fmt.Fprintf(&b, "[user]\n\tname = %s\n\temail = %s\n", quoteValue(id.Name), quoteValue(id.Email))
	}
	// The empty helper drops any the image configured: ours is the only one.
	fmt.Fprintf(&b, "[credential]\n\thelper =\n\thelper = %s\n", quoteValue(helper))
	fmt.Fprintf(&b, "[core]\n\tsshCommand = %s\n[ssh]\n\tvariant = ssh\n", quoteValue(helper+" ssh"))
	return b.String()
}

// quoteValue quotes a git config value: inside double quotes, '\\' and '"'
// escaped, control characters as escapes git knows or dropped.
func quoteValue(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sshConfigFor is the SSH client config git's ssh uses: the agent's socket
// for the identity's hosts (a host with a port: that port only), none for
// any other.
func sshConfigFor(id Identity, agentSock string) string {
	var b strings.Builder
	b.WriteString("# Written by choir-agent (design §14.4): the git identity's SSH key is\n# offered to its hosts only.\n")
	if id.SSHKey() {
		for _, h := range id.Hosts {
			fmt.Fprintf(&b, "Match host %s", h.Name)
			if h.Port != "" {
				fmt.Fprintf(&b, ` exec "test %%p = %s"`, h.Port)
			}
			fmt.Fprintf(&b, "\n\tIdentityAgent %s\n", agentSock)
		}
	}
	b.WriteString("Host *\n\tIdentityAgent none\n\tBatchMode yes\n")
	return b.String()
}

// serve answers the helper's requests until the listener closes. At most
// maxConns are handled at once; a connection beyond them is closed at
// once, so a tool flooding the socket costs the agent no more than that.
func (s *Service) serve() {
	slots := make(chan struct{}, maxConns)
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("git identity: accept on the helper socket", "error", err.Error())
			}
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			conn.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-slots }()
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			conn.SetDeadline(time.Now().Add(readTimeout))
			s.handle(ctx, conn)
		}()
	}
}

// Bounds of the helper's socket: connections handled at once, the time a
// request may take to arrive, and the time one may take in all (starting
// ssh-agent included).
const (
	maxConns       = 16
	readTimeout    = 5 * time.Second
	requestTimeout = 30 * time.Second
)

// HasPasswdEntry says whether the passwd file names uid: OpenSSH's ssh
// refuses to run for a uid it cannot look up.
func HasPasswdEntry(passwd string, uid int) bool {
	data, err := os.ReadFile(passwd)
	if err != nil {
		return false
	}
	want := strconv.Itoa(uid)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 3 && f[2] == want {
			return true
		}
	}
	return false
}

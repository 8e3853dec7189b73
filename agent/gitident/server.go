package gitident

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"choir/internal/gitcred"
)

// Verbs of the helper's protocol.
const (
	verbGet = "get"
	verbSSH = "ssh"
)

// handle answers one request on conn.
func (s *Service) handle(ctx context.Context, conn net.Conn) {
	br := bufio.NewReader(io.LimitReader(conn, gitcred.MaxRequest+64))
	verb, err := br.ReadString('\n')
	if err != nil || len(verb) > 16 {
		fmt.Fprintf(conn, "refused malformed request: want a verb line (get or ssh)\n")
		return
	}
	req, err := gitcred.Read(br)
	if err != nil {
		fmt.Fprintf(conn, "refused %s\n", oneLine(err.Error()))
		return
	}
	conn.SetDeadline(time.Now().Add(requestTimeout))
	var answer string
	switch strings.TrimSuffix(verb, "\n") {
	case verbGet:
		answer = s.get(req)
	case verbSSH:
		answer = s.sshReady(ctx, req)
	default:
		answer = "refused unknown verb: want get or ssh\n"
	}
	io.WriteString(conn, answer)
}

// get answers git's credential request: the token for an allowed host
// over https, and nothing else.
func (s *Service) get(req gitcred.Request) string {
	id, err := s.source()
	if err != nil {
		return refuse("%v", err)
	}
	where := fmt.Sprintf("%s://%s", req.Protocol, req.Host)
	switch {
	case req.Host == "":
		return refuse("the request names no host")
	case req.Protocol != "https":
		return refuse("%s: git identity %q gives its token over https only", where, id.Binding)
	}
	if _, ok := allowed(id, req.Host, "443"); !ok {
		s.log.Warn("git credential refused", "host", req.Host, "git_identity", id.Binding)
		return refuse("%s is not a host of git identity %q (its hosts: %s); add it to git_identities.%s.hosts in config.json if it should be", where, id.Binding, hostList(id), id.Binding)
	}
	if id.Secret == "" {
		return refuse("git identity %q: %s", id.Binding, noSecret(id))
	}
	if id.SSHKey() {
		return refuse("git identity %q holds an SSH key, not a token: use an ssh:// or git@ remote", id.Binding)
	}
	var b strings.Builder
	b.WriteString("ok\n")
	if err := (gitcred.Credential{Username: id.Username, Password: id.Secret}).Write(&b); err != nil {
		return refuse("git identity %q: its secret is not a single-line token", id.Binding)
	}
	s.log.Info("git credential given", "host", req.Host, "git_identity", id.Binding)
	return b.String()
}

// sshReady starts the ssh-agent with the identity's key when git's ssh is
// about to connect to an allowed host.
func (s *Service) sshReady(ctx context.Context, req gitcred.Request) string {
	id, err := s.source()
	if err != nil {
		return refuse("%v", err)
	}
	if _, ok := allowed(id, req.Host, "22"); !ok || req.Protocol != "ssh" {
		return refuse("ssh://%s is not a host of git identity %q (its hosts: %s): no key offered", req.Host, id.Binding, hostList(id))
	}
	if id.Secret == "" {
		return refuse("git identity %q: %s: no key offered", id.Binding, noSecret(id))
	}
	if !id.SSHKey() {
		return refuse("git identity %q holds a token, not an SSH key: no key offered (use an https:// remote)", id.Binding)
	}
	if err := s.ssh.ensure(ctx, id.Secret); err != nil {
		s.log.Error("git identity: ssh-agent", "error", err.Error())
		return refuse("ssh-agent: %v", err)
	}
	return "ok\n"
}

// allowed is the identity's host that remote (NAME or NAME:PORT, at port
// def when it names none) matches.
func allowed(id Identity, remote, def string) (gitcred.Host, bool) {
	h, err := gitcred.ParseHost(remote)
	if err != nil {
		return gitcred.Host{}, false
	}
	if h.Port == "" {
		h.Port = def
	}
	return gitcred.Allowed(id.Hosts, h.String())
}

func hostList(id Identity) string {
	var hs []string
	for _, h := range id.Hosts {
		hs = append(hs, h.String())
	}
	if len(hs) == 0 {
		return "none"
	}
	return strings.Join(hs, ", ")
}

func refuse(format string, args ...any) string {
	return "refused " + oneLine(fmt.Sprintf(format, args...)) + "\n"
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func noSecret(id Identity) string {
	if id.NoSecret != "" {
		return id.NoSecret
	}
	return "it has no secret"
}

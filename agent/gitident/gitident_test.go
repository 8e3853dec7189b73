package gitident

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/gitcred"
)

const testToken = "ghp-Test-Token-9Xq"

func hosts(t *testing.T, hs ...string) []gitcred.Host {
	t.Helper()
	var out []gitcred.Host
	for _, h := range hs {
		p, err := gitcred.ParseHost(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// start serves a Service in a temporary directory; the identity it
// serves is what *cur holds when asked.
func start(t *testing.T, id Identity) (*Service, string, *atomic.Pointer[Identity]) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "git") // short: a socket path has a length limit
	var cur atomic.Pointer[Identity]
	cur.Store(&id)
	s, err := Start(dir, "/choir/bin/git-cred-helper", func() (Identity, error) {
		id := cur.Load()
		if id == nil {
			return Identity{}, errors.New("no git identity is bound in this session")
		}
		return *id, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, dir, &cur
}

func tokenIdentity(t *testing.T) Identity {
	return Identity{Binding: "dev", Name: "Dev Bot", Email: "dev@example.com", Username: "x-access-token",
		Hosts: hosts(t, "github.com", "git.example.com:8443"), Secret: testToken}
}

func helper(t *testing.T, dir, input string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(dir, args, strings.NewReader(input), &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelperGivesTheTokenOnlyToAllowedHTTPSHosts(t *testing.T) {
	_, dir, _ := start(t, tokenIdentity(t))
	for _, in := range []string{
		"protocol=https\nhost=github.com\n\n",
		"protocol=https\nhost=GitHub.com\npath=org/repo.git\n\n",
		"capability[]=authtype\nprotocol=https\nhost=github.com:443\nwwwauth[]=Basic realm=\"GitHub\"\n\n",
		"protocol=https\nhost=git.example.com:8443\n\n",
	} {
		code, out, stderr := helper(t, dir, in, "get")
		if code != 0 || out != "username=x-access-token\npassword="+testToken+"\n\n" {
			t.Errorf("helper get %q = %d %q %q; want the token", in, code, out, stderr)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"protocol=https\nhost=evil.example\n\n", `https://evil.example is not a host of git identity "dev" (its hosts: github.com, git.example.com:8443)`},
		{"protocol=https\nhost=github.com.evil.example\n\n", "is not a host"},
		{"protocol=https\nhost=git.example.com\n\n", "is not a host"},
		{"protocol=http\nhost=github.com\n\n", "over https only"},
		{"protocol=ssh\nhost=github.com\n\n", "over https only"},
		{"protocol=https\n\n", "names no host"},
		{"host=github.com\n\n", "over https only"},
		{"protocol=https\nhost=github.com@evil.example\n\n", "is not a host"},
		{"protocol=https\nhost=github.com/../evil.example\n\n", "is not a host"},
		{"protocol=https\nhost=github.com\nhost=evil.example\n\n", "given twice"},
		{"protocol=https\nhost=" + strings.Repeat("g", 1<<20) + "\n\n", "line longer"},
		{"protocol=https\nhost=github.com\x00evil\n\n", "NUL"},
	} {
		code, out, stderr := helper(t, dir, tc.in, "get")
		if strings.Contains(out, testToken) || !strings.Contains(out, "quit=1") || !strings.Contains(stderr, tc.want) {
			t.Errorf("helper get %.80q = %d %q %q; want quit=1 and %q on stderr", tc.in, code, out, stderr, tc.want)
		}
	}
}

func TestHelperStoreAndEraseKeepNothing(t *testing.T) {
	_, dir, _ := start(t, tokenIdentity(t))
	for _, op := range []string{"store", "erase", "future-op"} {
		code, out, _ := helper(t, dir, "protocol=https\nhost=evil.example\nusername=u\npassword=p\n\n", op)
		if code != 0 || out != "" {
			t.Errorf("helper %s = %d %q; want 0 and no output", op, code, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(data, []byte(testToken)) || bytes.Contains(data, []byte("password=p")) {
			t.Errorf("%s holds a credential", e.Name())
		}
	}
}

func TestHelperRefusesWithoutIdentityOrAgent(t *testing.T) {
	_, dir, cur := start(t, tokenIdentity(t))
	cur.Store(nil)
	if _, out, stderr := helper(t, dir, "protocol=https\nhost=github.com\n\n", "get"); !strings.Contains(out, "quit=1") || !strings.Contains(stderr, "no git identity is bound") {
		t.Errorf("helper get without an identity = %q %q", out, stderr)
	}
	ssh := tokenIdentity(t)
	ssh.Secret = "-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n-----END OPENSSH PRIVATE KEY-----\n"
	cur.Store(&ssh)
	if _, out, stderr := helper(t, dir, "protocol=https\nhost=github.com\n\n", "get"); strings.Contains(out, "BEGIN") || !strings.Contains(stderr, "holds an SSH key, not a token") {
		t.Errorf("helper get with an SSH key identity = %q %q", out, stderr)
	}
	if _, out, stderr := helper(t, filepath.Join(t.TempDir(), "none"), "protocol=https\nhost=github.com\n\n", "get"); !strings.Contains(out, "quit=1") || !strings.Contains(stderr, "cannot reach choir-agent") {
		t.Errorf("helper get with no agent = %q %q", out, stderr)
	}
}

func TestSocketRefusesMalformedRequests(t *testing.T) {
	_, dir, _ := start(t, tokenIdentity(t))
	for _, tc := range []struct{ in, want string }{
		{"steal\nprotocol=https\nhost=github.com\n\n", "refused unknown verb"},
		{strings.Repeat("x", 100), "refused malformed request"},
		{"get\n" + strings.Repeat("capability[]=x\n", 5000), "refused credential request too large"},
		{"ssh\nprotocol=https\nhost=github.com:22\n\n", "refused ssh://github.com:22"},
	} {
		conn, err := net.Dial("unix", filepath.Join(dir, socketName))
		if err != nil {
			t.Fatal(err)
		}
		go func() { conn.Write([]byte(tc.in)); conn.(*net.UnixConn).CloseWrite() }()
		var b bytes.Buffer
		b.ReadFrom(conn)
		conn.Close()
		if !strings.HasPrefix(b.String(), tc.want) || strings.Contains(b.String(), testToken) {
			t.Errorf("request %.40q: answer %q; want %q", tc.in, b.String(), tc.want)
		}
	}
}

func TestGitReadsTheIdentity(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	id := tokenIdentity(t)
	id.Name = `Dev "The Bot" \ Ünïcode`
	s, dir, cur := start(t, id)
	read := func(key string) string {
		cmd := exec.Command(git, "config", "--get", key)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"HOME=" + t.TempDir(), EnvConfig + "=" + s.ConfigPath(), "PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git config --get %s: %v", key, err)
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	for key, want := range map[string]string{"user.name": id.Name, "user.email": "dev@example.com",
		"credential.helper": "/choir/bin/git-cred-helper", "core.sshcommand": "/choir/bin/git-cred-helper ssh", "ssh.variant": "ssh"} {
		if got := read(key); got != want {
			t.Errorf("git config %s = %q; want %q", key, got, want)
		}
	}
	// A new binding (a resumed session with another identity) rewrites it.
	other := tokenIdentity(t)
	other.Name, other.Email = "Ops", "ops@example.com"
	cur.Store(&other)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if got := read("user.email"); got != "ops@example.com" {
		t.Errorf("after the identity changed, user.email = %q; want ops@example.com", got)
	}
	data, _ := os.ReadFile(filepath.Join(dir, configName))
	if bytes.Contains(data, []byte(testToken)) {
		t.Errorf("gitconfig holds the token:\n%s", data)
	}
}

func TestSSHConfigOffersTheKeyToAllowedHostsOnly(t *testing.T) {
	id := tokenIdentity(t)
	id.Secret = "-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n-----END OPENSSH PRIVATE KEY-----"
	cfg := sshConfigFor(id, "/run/choir-git/ssh-agent.sock")
	for _, want := range []string{
		"Match host github.com\n\tIdentityAgent /run/choir-git/ssh-agent.sock\n",
		"Match host git.example.com exec \"test %p = 8443\"\n\tIdentityAgent /run/choir-git/ssh-agent.sock\n",
		"Host *\n\tIdentityAgent none\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("ssh_config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "BEGIN") {
		t.Errorf("ssh_config holds the key:\n%s", cfg)
	}
	if cfg := sshConfigFor(tokenIdentity(t), "/s"); strings.Contains(cfg, "IdentityAgent /s") {
		t.Errorf("ssh_config of a token identity offers the agent:\n%s", cfg)
	}
}

func TestSSHDestination(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		host, port string
	}{
		{[]string{"git@github.com", "git-upload-pack 'org/repo.git'"}, "github.com", "22"},
		{[]string{"-o", "SendEnv=GIT_PROTOCOL", "-p", "2222", "git@172.17.0.1", "git-receive-pack '/r.git'"}, "172.17.0.1", "2222"},
		{[]string{"-4", "-p2200", "host", "cmd"}, "host", "2200"},
		{[]string{"-6", "git@[::1]", "cmd"}, "::1", "22"},
	} {
		host, port, err := sshDestination(tc.args)
		if err != nil || host != tc.host || port != tc.port {
			t.Errorf("sshDestination(%q) = %q %q %v; want %q %q", tc.args, host, port, err, tc.host, tc.port)
		}
	}
	if _, _, err := sshDestination([]string{"-p", "22"}); err == nil {
		t.Error("sshDestination without a host = nil error")
	}
}

func TestSSHAgentLoadsTheKeyForAllowedHostsOnly(t *testing.T) {
	for _, bin := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s (openssh-client)", bin)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "k")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "choir-test", "-f", keyFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	key, _ := os.ReadFile(keyFile)
	id := tokenIdentity(t)
	id.Secret = strings.TrimSuffix(string(key), "\n") // secrets lose their last newline
	_, dir, _ := start(t, id)
	agentSock := filepath.Join(dir, sshDir, sshAgentSock)

	var stderr bytes.Buffer
	sshPrepare(dir, []string{"-p", "22", "git@evil.example", "git-receive-pack 'r'"}, &stderr)
	if !strings.Contains(stderr.String(), `ssh://evil.example:22 is not a host of git identity "dev"`) {
		t.Errorf("ssh to another host: stderr %q", stderr.String())
	}
	if _, err := os.Stat(agentSock); err == nil {
		t.Error("an ssh-agent runs after a request for another host")
	}
	stderr.Reset()
	sshPrepare(dir, []string{"-o", "SendEnv=GIT_PROTOCOL", "-p", "8443", "git@git.example.com", "git-receive-pack 'r'"}, &stderr)
	if stderr.Len() != 0 {
		t.Errorf("ssh to an allowed host: stderr %q", stderr.String())
	}
	list := exec.Command("ssh-add", "-l")
	list.Env = []string{"SSH_AUTH_SOCK=" + agentSock, "PATH=" + os.Getenv("PATH")}
	out, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "choir-test (ED25519)") {
		t.Errorf("ssh-add -l = %v %q; want the identity's key", err, out)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds the private key", e.Name())
		}
	}
}

func TestHasPasswdEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/sh\nchoir:x:64000:64000::/tmp:/bin/sh\nbad:x\n"), 0o644)
	for uid, want := range map[int]bool{0: true, 64000: true, 6400: false, 1000: false} {
		if got := HasPasswdEntry(p, uid); got != want {
			t.Errorf("HasPasswdEntry(%d) = %v; want %v", uid, got, want)
		}
	}
	if HasPasswdEntry(filepath.Join(t.TempDir(), "none"), 0) {
		t.Error("HasPasswdEntry(a missing file) = true")
	}
}

// A tool flooding the socket with connections that send nothing holds at
// most maxConns of them; the rest are closed at once, and the socket
// answers again once the flood ends.
func TestSocketFloodIsBounded(t *testing.T) {
	_, dir, _ := start(t, tokenIdentity(t))
	var conns []net.Conn
	closed := 0
	for i := 0; i < 200; i++ {
		conn, err := net.Dial("unix", filepath.Join(dir, socketName))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++ // the agent closed it: no slot
		}
	}
	if closed < 200-maxConns {
		t.Errorf("%d of 200 idle connections were closed; want at least %d (the agent holds at most %d)", closed, 200-maxConns, maxConns)
	}
	for _, conn := range conns {
		conn.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, stderr := helper(t, dir, "protocol=https\nhost=github.com\n\n", "get")
		if code == 0 && strings.Contains(out, testToken) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood, helper get = %d %q %q", code, out, stderr)
		}
	}
}

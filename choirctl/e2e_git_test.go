package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// The git identity tests (§14.4) run one agent on an image built from the
// reference Dockerfile.base, with a model that runs shell commands through
// choir.exec, and push with real git: over HTTPS to git http-backend
// behind basic auth, and over SSH to Debian's sshd, both on the bridge
// gateway; and to a decoy of each, which would accept the credential but is
// not one of the identity's hosts.

const (
	gitToken   = "ghp-e2e-Token-4Wc7"
	httpsAgent = "gitter"
)

// TestGitIdentityPushesOnlyToItsHosts: the session's git identity is in
// the container's git config (not the environment, the workspace or
// .git/config), its token goes to its own host over HTTPS and not to
// another, and after a restart bound to an identity with an SSH key, that
// key authenticates a push to its host and is offered to no other. No
// process environment, workspace file or .git/config ever holds the token
// or the key.
func TestGitIdentityPushesOnlyToItsHosts(t *testing.T) {
	for _, bin := range []string{"/usr/sbin/sshd", "ssh-keygen", "git", "/usr/lib/git-core/git-http-backend"} {
		if _, err := exec.LookPath(bin); err != nil {
			testkit.Unavailable(t, "%s: %v (apt-get install -y --no-install-recommends git openssh-server)", bin, err)
		}
	}
	dc := dockertest.Engine(t)
	ip := dockertest.BridgeIP(t)
	image := gitAgentImage(t, dc, imagetest.Debian(t, dc))

	repos := t.TempDir()
	for _, r := range []string{"https.git", "ssh.git"} {
		gitOK(t, "", "init", "-q", "--bare", "-b", "main", filepath.Join(repos, r))
		gitOK(t, "", "--git-dir", filepath.Join(repos, r), "config", "http.receivepack", "true")
	}
	cert, caPEM := gitTLSCert(t, ip)
	origin, decoy := startGitHTTPS(t, ip, repos, cert), startGitHTTPS(t, ip, repos, cert)
	keyPEM, pubKey := sshKeyPair(t)
	sshOrigin, sshDecoy := startSSHD(t, ip, pubKey), startSSHD(t, ip, pubKey)

	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	model := &shellModel{}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: model}
	go ms.Serve(l)
	t.Cleanup(func() { ms.Close() })
	ws := testkit.Workspace(t)
	os.WriteFile(filepath.Join(ws, "ca.pem"), caPEM, 0o644)

	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "shell", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
	cfg["git_identities"] = map[string]any{
		"https-id": map[string]any{"name": "Https Bot", "email": "https@choir.local", "secret": "git-token", "hosts": []string{origin.addr}},
		"ssh-id":   map[string]any{"name": "Ssh Bot", "email": "ssh@choir.local", "secret": "git-key", "hosts": []string{sshOrigin.addr, origin.addr}},
	}
	cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
	cfg["workspaces"] = map[string]any{httpsAgent: map[string]any{"path": ws}}
	cfg["dms"] = map[string]any{httpsAgent: map[string]any{"gateway": "console", "admin": true}}
	cfg["agents"] = map[string]any{httpsAgent: map[string]any{"defaults": map[string]any{"workspace": httpsAgent, "llm": "m", "git_identity": "https-id", "dm": httpsAgent}}}
	cfg["container"] = map[string]any{"cpus": 1, "memory_mb": 256, "pids": 256}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": boundaryLLMKey, "git-token": gitToken, "git-key": keyPEM} {
		if _, stderr, code := ctlRun(t, home, value, "secret", "set", name); code != 0 { // from stdin: the key starts with '-'
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImageFrom(t, dc, image, httpsAgent, "b1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	rig := &boundaryRig{home: home, dc: dc, d: d, workspace: map[string]string{httpsAgent: ws}, model: model}

	// The token identity: a push to its host, a refused push to the decoy,
	// both in one command.
	rig.start(t, httpsAgent)
	rig.say(t, httpsAgent, `$ exec >/workspace/https.out 2>&1
echo "== name: $(git config --get user.name) <$(git config --get user.email)>"
echo "== helper: $(git config --get-all credential.helper | tr '\n' ' ')"
cd /workspace && git init -q -b main repo && cd repo && echo one >f && git add f && git commit -qm one
git -c http.sslCAInfo=/workspace/ca.pem push https://`+origin.addr+`/https.git main; echo "== origin rc=$?"
git -c http.sslCAInfo=/workspace/ca.pem push https://`+decoy.addr+`/https.git main; echo "== decoy rc=$?"
for p in /proc/[0-9]*; do tr '\0' '\n' <$p/environ; done >/workspace/environ 2>/dev/null
echo x >>/run/choir-git/gitconfig && echo "CHANGED gitconfig"
rm -f /run/choir-git/cred.sock; [ -S /run/choir-git/cred.sock ] || echo "CHANGED cred.sock"
echo "== env"; env | grep ^GIT_
echo "== done"`)
	got := readWS(t, ws, "https.out")
	for _, want := range []string{
		"== name: Https Bot <https@choir.local>",
		"== helper:  /choir/bin/git-cred-helper", // the empty helper first: git-cred-helper is the only one
		"== origin rc=0",
		fmt.Sprintf(`git-cred-helper: refused: https://%s is not a host of git identity "https-id" (its hosts: %s)`, decoy.addr, origin.addr),
		"== env\nGIT_CONFIG_SYSTEM=/run/choir-git/gitconfig\n== done",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the HTTPS pushes' output lacks %q:\n%s\nagent log:\n%s", want, got, grepLines(rig.agentLogTail(httpsAgent), "git"))
		}
	}
	for _, bad := range []string{"== decoy rc=0", "CHANGED"} {
		if strings.Contains(got, bad) {
			t.Errorf("the HTTPS pushes' output holds %q (a push to the decoy, or a tool changed the identity's files):\n%s", bad, got)
		}
	}
	if author := gitOK(t, "", "--git-dir", filepath.Join(repos, "https.git"), "log", "-1", "--format=%an <%ae>", "main"); author != "Https Bot <https@choir.local>" {
		t.Errorf("the pushed commit's author = %q; want the identity's", author)
	}
	if n := origin.authorized(); n == 0 {
		t.Error("the origin never saw the token")
	}
	if seen := decoy.credentials(); len(seen) != 0 {
		t.Errorf("the decoy received credentials: %q", seen)
	}
	checkNoGitSecret(t, rig, ws, gitToken)

	// A restart bound to the SSH identity: its name in the git config, its
	// key in an ssh-agent for its host only.
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", httpsAgent); code != 0 {
		t.Fatalf("agent stop = %d %s", code, stderr)
	}
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", httpsAgent, "--dm="+httpsAgent, "--git-identity=ssh-id"); code != 0 {
		t.Fatalf("agent start --git-identity=ssh-id = %d %q %q", code, out, stderr)
	}
	rig.say(t, httpsAgent, `$ exec >/workspace/ssh.out 2>&1
echo "== name: $(git config --get user.name) <$(git config --get user.email)>"
mkdir -p -m 700 ~/.ssh && printf '%s\n' '`+sshOrigin.knownHost+`' '`+sshDecoy.knownHost+`' >~/.ssh/known_hosts
cd /workspace/repo && echo two >f && git commit -qam two
git push ssh://root@`+sshOrigin.addr+`/`+strings.TrimPrefix(filepath.Join(repos, "ssh.git"), "/")+` main; echo "== origin rc=$?"
git push ssh://root@`+sshDecoy.addr+`/`+strings.TrimPrefix(filepath.Join(repos, "ssh.git"), "/")+` main:decoy; echo "== decoy rc=$?"
git -c http.sslCAInfo=/workspace/ca.pem push https://`+origin.addr+`/https.git main; echo "== https rc=$?"
p=$(pidof ssh-agent); echo "== ssh-agent pid $p"
(exec 3</proc/$p/mem) 2>/dev/null && echo "OPENED-MEM ssh-agent"
for p in /proc/[0-9]*; do tr '\0' '\n' <$p/environ; done >/workspace/environ 2>/dev/null
echo "== done"`)
	got = readWS(t, ws, "ssh.out")
	for _, want := range []string{
		"== name: Ssh Bot <ssh@choir.local>",
		"== origin rc=0",
		fmt.Sprintf(`git-cred-helper: refused: ssh://%s is not a host of git identity "ssh-id" (its hosts: %s, %s): no key offered`, sshDecoy.addr, sshOrigin.addr, origin.addr),
		"Permission denied (publickey)",
		`git identity "ssh-id" holds an SSH key, not a token`,
		"== done",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the SSH pushes' output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "== ssh-agent pid \n") {
		t.Errorf("no ssh-agent ran after the SSH push:\n%s", got)
	}
	for _, bad := range []string{"== decoy rc=0", "== https rc=0", "OPENED-MEM"} {
		if strings.Contains(got, bad) {
			t.Errorf("the SSH pushes' output holds %q:\n%s", bad, got)
		}
	}
	if author := gitOK(t, "", "--git-dir", filepath.Join(repos, "ssh.git"), "log", "-1", "--format=%an <%ae> %s", "main"); author != "Ssh Bot <ssh@choir.local> two" {
		t.Errorf("the commit pushed over SSH = %q; want the SSH identity's", author)
	}
	if sshOrigin.acceptedKeys() == 0 {
		t.Errorf("sshd accepted no public key:\n%s", sshOrigin.log())
	}
	if n := sshDecoy.acceptedKeys(); n != 0 {
		t.Errorf("the decoy sshd accepted the key %d times:\n%s", n, sshDecoy.log())
	}
	keyBody := strings.Split(keyPEM, "\n")[1] // a line of the key's base64
	checkNoGitSecret(t, rig, ws, keyBody)
	checkNoGitSecret(t, rig, ws, gitToken)
}

// checkNoGitSecret looks for secret in the container's environment (as the
// engine has it), every process's environ (read by the command into
// /workspace/environ), every file of the workspace and the repository's
// .git/config.
func checkNoGitSecret(t *testing.T, rig *boundaryRig, ws, secret string) {
	t.Helper()
	for k, v := range envOf(rig.container(t, httpsAgent)) {
		if strings.Contains(v, secret) {
			t.Errorf("the container's environment %s holds the secret", k)
		}
	}
	if env := readWS(t, ws, "environ"); !strings.Contains(env, "GIT_CONFIG_SYSTEM=") {
		t.Errorf("the tools' environ was not read: %q", firstLines(env, 5))
	}
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	if conf := readWS(t, ws, "repo/.git/config"); strings.Contains(conf, "[user]") || strings.Contains(conf, "[credential") || strings.Contains(conf, "sshCommand") {
		t.Errorf(".git/config holds the identity:\n%s", conf)
	}
}

func readWS(t *testing.T, ws, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil {
		t.Fatalf("%s in the workspace: %v", name, err)
	}
	return string(data)
}

// gitOK runs git on the host and returns its trimmed output.
func gitOK(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitAgentImage builds the reference Dockerfile.base on Debian, with a
// passwd entry for the workspace's owner (ssh runs only for a uid it can
// look up; an installation adds its own user the same way).
func gitAgentImage(t *testing.T, dc *docker.Client, debian string) string {
	t.Helper()
	base, err := os.ReadFile("../Dockerfile.base")
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := strings.Replace(string(base), "FROM debian:bookworm-slim", "FROM "+debian, 1) +
		fmt.Sprintf("RUN echo 'choir:x:%d:%d:choir tools:/tmp:/bin/bash' >>/etc/passwd && echo 'choir:x:%d:' >>/etc/group\n", testkit.ToolUID, testkit.ToolGID, testkit.ToolGID)
	bin, err := os.ReadFile(testkit.Build(t, "choir/agent"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		body []byte
		mode int64
	}{{"Dockerfile", []byte(dockerfile), 0o644}, {"choir-agent", bin, 0o755}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))})
		tw.Write(f.body)
	}
	tw.Close()
	ref := "choir-test/git-base:1"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := dc.ImageBuild(ctx, &buf, docker.BuildOptions{Tags: []string{ref}}); err != nil {
		t.Fatalf("build Dockerfile.base on Debian: %v", err)
	}
	t.Cleanup(func() { dc.ImageRemove(context.Background(), ref, docker.ImageRemoveOptions{Force: true}) })
	return ref
}

// gitTLSCert is a self-signed certificate for ip, and its PEM.
func gitTLSCert(t *testing.T, ip string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "choir git test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// gitHTTPS is git's smart HTTP (git http-backend through net/http/cgi)
// behind basic auth that wants the identity's token. It records every
// Authorization header it is sent.
type gitHTTPS struct {
	addr string
	mu   sync.Mutex
	auth []string
	ok   int
}

func startGitHTTPS(t *testing.T, ip, repos string, cert tls.Certificate) *gitHTTPS {
	t.Helper()
	s := &gitHTTPS{}
	backend := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token"}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		s.mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			s.auth = append(s.auth, a)
		}
		good := ok && user == "x-access-token" && pass == gitToken
		if good {
			s.ok++
		}
		s.mu.Unlock()
		if !good {
			w.Header().Set("WWW-Authenticate", `Basic realm="choir test"`)
			http.Error(w, "token wanted", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	l, err := tls.Listen("tcp", net.JoinHostPort(ip, "0"), &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.addr = l.Addr().String()
	return s
}

func (s *gitHTTPS) authorized() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok
}

func (s *gitHTTPS) credentials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// sshKeyPair is a new ed25519 key: the private key as secrets.json holds
// it (no last newline) and the authorized_keys line.
func sshKeyPair(t *testing.T) (private, public string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "choir-e2e", "-f", f).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	priv, _ := os.ReadFile(f)
	pub, _ := os.ReadFile(f + ".pub")
	return strings.TrimSuffix(string(priv), "\n"), string(pub)
}

// sshServer is Debian's sshd serving each connection of a listener on the
// bridge gateway in inetd mode (sshd -i), with its own host key and
// authorized_keys; it logs to a buffer.
type sshServer struct {
	addr, knownHost string
	logs            *testkit.Buffer
}

func startSSHD(t *testing.T, ip, authorizedKey string) *sshServer {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "host_key")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(authorizedKey), 0o600)
	conf := filepath.Join(dir, "sshd_config")
	os.WriteFile(conf, []byte(fmt.Sprintf(`HostKey %[1]s/host_key
AuthorizedKeysFile %[1]s/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
PidFile none
LogLevel VERBOSE
`, dir)), 0o644)
	if os.Getuid() != 0 {
		testkit.Unavailable(t, "sshd must run as root to log in a user (running as uid %d)", os.Getuid())
	}
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	if out, err := exec.Command("/usr/sbin/sshd", "-t", "-f", conf).CombinedOutput(); err != nil {
		t.Fatalf("sshd -t: %v %s", err, out)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &sshServer{addr: l.Addr().String(), logs: &testkit.Buffer{}}
	pub, _ := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	fields := strings.Fields(string(pub))
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	s.knownHost = "[" + ip + "]:" + port + " " + fields[0] + " " + fields[1]
	var wg sync.WaitGroup
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f, err := conn.(*net.TCPConn).File()
			conn.Close()
			if err != nil {
				continue
			}
			cmd := exec.Command("/usr/sbin/sshd", "-i", "-e", "-f", conf)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, s.logs
			if err := cmd.Start(); err != nil {
				fmt.Fprintf(s.logs, "start sshd: %v\n", err)
				f.Close()
				continue
			}
			f.Close()
			wg.Add(1)
			go func() { defer wg.Done(); cmd.Wait() }()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return s
}

func (s *sshServer) log() string { return s.logs.String() }

func (s *sshServer) acceptedKeys() int { return strings.Count(s.logs.String(), "Accepted publickey") }

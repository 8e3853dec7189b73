// Package mailtest starts real mail servers for tests, unprivileged and in
// temporary directories: Dovecot (IMAP with STARTTLS and implicit TLS, and
// LMTP to put test mail in) and an aiosmtpd SMTP server (STARTTLS and AUTH
// required) that records what it accepts. Both use a self-signed
// certificate the test makes with openssl; its PEM doubles as the CA a
// client must trust.
//
// A test that needs a server it cannot start (Debian's dovecot-imapd,
// dovecot-lmtpd, python3-aiosmtpd and openssl missing) skips with the
// reason under go test and fails under CHOIR_TEST_STRICT=1 (make test).
package mailtest

import (
	"bufio"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/testkit"
)

// User and Password are the account both servers know.
const (
	User     = "alice"
	Password = "alice-pw-7Qx"
	// Address is the user's address at Dovecot (LMTP delivers to User).
	Address = "alice@choir.test"
)

// Cert is a self-signed certificate and key for the given hosts.
type Cert struct {
	CertFile, KeyFile string
	// PEM is the certificate, which is its own CA.
	PEM  []byte
	Pool *x509.CertPool
}

// NewCert makes a certificate for localhost and each host (IP or name).
func NewCert(t testing.TB, hosts ...string) *Cert {
	t.Helper()
	openssl := need(t, "openssl", "openssl")
	dir := t.TempDir()
	san := []string{"DNS:localhost", "IP:127.0.0.1"}
	for _, h := range hosts {
		if net.ParseIP(h) != nil {
			san = append(san, "IP:"+h)
		} else {
			san = append(san, "DNS:"+h)
		}
	}
	c := &Cert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	cmd := exec.Command(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-days", "2", "-subj", "/CN=choir mailtest", "-keyout", c.KeyFile, "-out", c.CertFile,
		"-addext", "subjectAltName="+strings.Join(san, ","), "-addext", "basicConstraints=critical,CA:TRUE")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	var err error
	if c.PEM, err = os.ReadFile(c.CertFile); err != nil {
		t.Fatal(err)
	}
	os.Chmod(c.KeyFile, 0o644) // Dovecot and aiosmtpd read it as their own users
	c.Pool = x509.NewCertPool()
	if !c.Pool.AppendCertsFromPEM(c.PEM) {
		t.Fatalf("openssl wrote an unreadable certificate:\n%s", c.PEM)
	}
	return c
}

// need finds an executable or makes the test unavailable.
func need(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return filepath.Join(dir, name)
			}
		}
		testkit.Unavailable(t, "%s not found (apt-get install -y --no-install-recommends %s)", name, pkg)
	}
	return p
}

// freePort returns a port free on host now.
func freePort(t testing.TB, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("find a free port on %s: %v", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// process is a server the test started; stop ends it with SIGTERM and
// waits.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func start(t testing.TB, cmd *exec.Cmd, log string) *process {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})
	return p
}

// waitFor polls ready until it holds, the process exits, or 15 s pass.
func (p *process) waitFor(t testing.TB, what, log string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ready() {
		select {
		case <-p.exited:
			out, _ := os.ReadFile(log)
			t.Fatalf("%s exited before it was ready:\n%s", what, out)
		default:
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log)
			t.Fatalf("%s not ready after 15 s:\n%s", what, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// greets reports whether addr answers with a first line starting prefix.
func greets(addr, prefix string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, prefix)
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, fmt.Sprint(port)) }

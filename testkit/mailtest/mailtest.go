// Package mailtest starts real mail servers, unprivileged and in temporary
// directories: Dovecot (IMAP with STARTTLS and implicit TLS, and LMTP to
// put test mail in) and an aiosmtpd SMTP server (STARTTLS or implicit TLS,
// AUTH required) that records what it accepts. Both use a self-signed
// certificate made with openssl; its PEM doubles as the CA a client must
// trust.
//
// Tests call NewCert, StartDovecot and StartSMTP, which stop the servers
// when the test ends; a server that cannot be had (Debian's dovecot-imapd,
// dovecot-lmtpd, python3-aiosmtpd or openssl missing) skips the test with
// the reason under go test and fails it under CHOIR_TEST_STRICT=1 (make
// test). Programs (make demo) call MakeCert, RunDovecot and RunSMTP and
// Stop what they started; a missing package is a *MissingError.
package mailtest

import (
	"bufio"
	"crypto/x509"
	"errors"
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

// MissingError says a program or package the servers need is not
// installed.
type MissingError struct{ What, Install string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s is missing (apt-get install -y --no-install-recommends %s)", e.What, e.Install)
}

// Cert is a self-signed certificate and key for the given hosts.
type Cert struct {
	CertFile, KeyFile string
	// PEM is the certificate, which is its own CA.
	PEM  []byte
	Pool *x509.CertPool
}

// NewCert makes a certificate for localhost and each host (IP or name),
// removed when the test ends.
func NewCert(t testing.TB, hosts ...string) *Cert {
	t.Helper()
	c, err := MakeCert(t.TempDir(), hosts...)
	check(t, err)
	return c
}

// MakeCert makes a certificate for localhost, 127.0.0.1 and each host in
// dir.
func MakeCert(dir string, hosts ...string) (*Cert, error) {
	openssl, err := find("openssl", "openssl")
	if err != nil {
		return nil, err
	}
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
		return nil, fmt.Errorf("openssl req: %v\n%s", err, out)
	}
	if c.PEM, err = os.ReadFile(c.CertFile); err != nil {
		return nil, err
	}
	os.Chmod(c.KeyFile, 0o644) // Dovecot and aiosmtpd read it as their own users
	c.Pool = x509.NewCertPool()
	if !c.Pool.AppendCertsFromPEM(c.PEM) {
		return nil, fmt.Errorf("openssl wrote an unreadable certificate:\n%s", c.PEM)
	}
	return c, nil
}

// check ends the test on err: a skip (or a strict failure) for a missing
// package, a failure otherwise.
func check(t testing.TB, err error) {
	t.Helper()
	var me *MissingError
	switch {
	case errors.As(err, &me):
		testkit.Unavailable(t, "%v", err)
	case err != nil:
		t.Fatal(err)
	}
}

// find finds an executable, also in the sbin directories a user's PATH
// may lack.
func find(name, pkg string) (string, error) {
	if testkit.NoBackends() {
		return "", &MissingError{What: name + " (" + testkit.NoBackendsEnv + "=1)", Install: pkg}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name), nil
		}
	}
	return "", &MissingError{What: name, Install: pkg}
}

// freePort returns a port free on host now.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// process is a server we started.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

func start(cmd *exec.Cmd, log string) (*process, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), log: log}
	go func() { cmd.Wait(); f.Close(); close(p.exited) }()
	return p, nil
}

// stop ends the process with SIGTERM (its group with SIGKILL after 10 s)
// and waits for it.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// waitFor polls ready until it holds, the process exits, or 15 s pass.
func (p *process) waitFor(what string, ready func() bool) error {
	deadline := time.Now().Add(15 * time.Second)
	for !ready() {
		select {
		case <-p.exited:
			out, _ := os.ReadFile(p.log)
			return fmt.Errorf("%s exited before it was ready:\n%s", what, out)
		default:
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(p.log)
			p.stop()
			return fmt.Errorf("%s not ready after 15 s:\n%s", what, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
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

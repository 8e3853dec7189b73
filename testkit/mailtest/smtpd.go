package mailtest

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

//go:embed smtpd.py
var smtpdScript []byte

// SMTP is a running aiosmtpd that requires STARTTLS and AUTH (User,
// Password) and records each message it accepts.
type SMTP struct {
	Host string
	Port int
	Cert *Cert
	dir  string
	proc *process
}

// Received is one message the SMTP server accepted.
type Received struct {
	MailFrom string   `json:"mail_from"`
	RcptTos  []string `json:"rcpt_tos"`
	// Data is the message as sent (after DATA, without the dot-stuffing).
	Data          []byte `json:"-"`
	DataB64       string `json:"data_b64"`
	TLS           bool   `json:"tls"`
	AuthMechanism string `json:"auth_mechanism"`
	Login         string `json:"login"`
}

// StartSMTP starts aiosmtpd listening on host (127.0.0.1 when empty) with
// cert, requiring STARTTLS, and stops it when the test ends.
func StartSMTP(t testing.TB, host string, cert *Cert) *SMTP {
	t.Helper()
	return startSMTP(t, host, cert, false)
}

// StartSMTPS is StartSMTP speaking TLS from the first byte (SMTPS, as on
// port 465).
func StartSMTPS(t testing.TB, host string, cert *Cert) *SMTP {
	t.Helper()
	return startSMTP(t, host, cert, true)
}

func startSMTP(t testing.TB, host string, cert *Cert, implicit bool) *SMTP {
	t.Helper()
	s, err := RunSMTP(t.TempDir(), host, cert, implicit)
	check(t, err)
	t.Cleanup(s.Stop)
	return s
}

// RunSMTP starts aiosmtpd in dir listening on host (127.0.0.1 when empty)
// with cert: STARTTLS required, or TLS from the first byte when implicit.
// Stop ends it.
func RunSMTP(dir, host string, cert *Cert, implicit bool) (*SMTP, error) {
	py := "/usr/bin/python3" // the python3 first on PATH may lack aiosmtpd
	if err := exec.Command(py, "-c", "import aiosmtpd").Run(); err != nil {
		return nil, &MissingError{What: "aiosmtpd for " + py, Install: "python3-aiosmtpd"}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	port, err := freePort(host)
	if err != nil {
		return nil, err
	}
	s := &SMTP{Host: host, Port: port, Cert: cert, dir: filepath.Join(dir, "received")}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "smtpd.py")
	if err := os.WriteFile(script, smtpdScript, 0o644); err != nil {
		return nil, err
	}
	args := []string{script, host, strconv.Itoa(s.Port), cert.CertFile, cert.KeyFile, User, Password, s.dir}
	if implicit {
		args = append(args, "implicit")
	}
	log := filepath.Join(dir, "smtpd.log")
	if s.proc, err = start(exec.Command(py, args...), log); err != nil {
		return nil, err
	}
	err = s.proc.waitFor("aiosmtpd", func() bool {
		out, _ := os.ReadFile(log)
		return strings.Contains(string(out), "ready") // the Controller itself waited for the greeting
	})
	return s, err
}

// Stop ends the server.
func (s *SMTP) Stop() { s.proc.stop() }

// Messages returns the messages accepted so far, oldest first.
func (s *SMTP) Messages(t testing.TB) []Received {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(s.dir, "*.json"))
	sort.Strings(names)
	var out []Received
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var r Received
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if r.Data, err = base64.StdEncoding.DecodeString(r.DataB64); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, r)
	}
	return out
}

// WaitMessages waits up to 20 s for n messages and returns them.
func (s *SMTP) WaitMessages(t testing.TB, n int) []Received {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := s.Messages(t)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SMTP server received %d messages in 20 s; want %d", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

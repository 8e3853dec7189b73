package mailtest

import (
	"bufio"
	"crypto/tls"
	"strings"
	"testing"
)

// The servers start, greet over TLS with the made certificate, and LMTP
// delivers into the maildir.
func TestServersStart(t *testing.T) {
	cert := NewCert(t)
	d := StartDovecot(t, "", cert)
	c, err := tls.Dial("tcp", hostPort(d.Host, d.IMAPSPort), &tls.Config{RootCAs: cert.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("dial imaps: %v", err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.HasPrefix(line, "* OK") {
		t.Errorf("imaps greeting = %q", line)
	}
	d.Deliver(t, "Subject: one\n\nbody\n")
	s := StartSMTP(t, "", cert)
	if got := s.Messages(t); len(got) != 0 {
		t.Errorf("a new SMTP server has %d messages", len(got))
	}
}

package smtp

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"choir/testkit/linetest"
)

// session is the scripted server's side of one connection
// (testkit/linetest), shared with the IMAP tests.
type session = linetest.Session

func serve(t *testing.T, implicit bool, script func(s *session)) (*linetest.Server, *x509.CertPool) {
	return linetest.Serve(t, implicit, script)
}

// config is a client config for the fake server.
func config(f *linetest.Server, pool *x509.CertPool) Config {
	return Config{Host: "127.0.0.1", Port: f.Addr.Port, Username: "alice", Password: "s3cret", RootCAs: pool, Timeout: 10 * time.Second}
}

// data reads a DATA body up to the lone dot.
func data(s *session) string {
	var b strings.Builder
	for {
		l, err := s.R.ReadString('\n')
		if err != nil || l == ".\r\n" {
			return b.String()
		}
		b.WriteString(strings.TrimPrefix(l, "."))
	}
}

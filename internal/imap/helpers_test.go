package imap

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"choir/testkit/linetest"
)

// session is the scripted server's side of one connection
// (testkit/linetest), shared with the SMTP tests.
type session = linetest.Session

func serve(t *testing.T, implicit bool, script func(s *session)) (*linetest.Server, *x509.CertPool) {
	return linetest.Serve(t, implicit, script)
}

// config is a client config for the fake server.
func config(f *linetest.Server, pool *x509.CertPool) Config {
	return Config{Host: "127.0.0.1", Port: f.Addr.Port, TLS: Implicit, Username: "alice", Password: "s3cret", RootCAs: pool, Timeout: 10 * time.Second}
}

// greetAndLogin plays the greeting and a LOGIN of alice/s3cret.
func greetAndLogin(s *session) {
	s.Send("* OK [CAPABILITY IMAP4rev1 AUTH=LOGIN] fake ready")
	tag := tagOf(s.Expect(`C001 LOGIN "alice" "s3cret"`))
	s.Send(tag + " OK logged in")
}

// tagOf returns the tag of a command line.
func tagOf(line string) string {
	tag, _, _ := strings.Cut(line, " ")
	return tag
}

package imap

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert makes a self-signed certificate for 127.0.0.1 and localhost and
// the pool that trusts it.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:         true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// fakeServer is a scripted SMTP server on loopback: script talks to one
// client through a session, which records every line the client sent.
type fakeServer struct {
	addr *net.TCPAddr
	mu   sync.Mutex
	got  []string
	done chan struct{}
}

type session struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	srv  *fakeServer
	cert tls.Certificate
}

func (s *session) send(lines ...string) {
	for _, l := range lines {
		s.conn.Write([]byte(l + "\r\n"))
	}
}

// recv reads one line from the client ("" at EOF) and records it.
func (s *session) recv() string {
	l, err := s.r.ReadString('\n')
	l = strings.TrimRight(l, "\r\n")
	if err != nil && l == "" {
		return ""
	}
	s.srv.mu.Lock()
	s.srv.got = append(s.srv.got, l)
	s.srv.mu.Unlock()
	return l
}

// expect reads one line and fails unless it starts with prefix.
func (s *session) expect(prefix string) string {
	l := s.recv()
	if !strings.HasPrefix(strings.ToUpper(l), strings.ToUpper(prefix)) {
		s.t.Errorf("client sent %q; want %q...", l, prefix)
	}
	return l
}

// startTLS wraps the connection in TLS, as the server side.
func (s *session) startTLS() {
	tc := tls.Server(s.conn, &tls.Config{Certificates: []tls.Certificate{s.cert}})
	if err := tc.Handshake(); err != nil {
		s.t.Logf("server handshake: %v", err)
	}
	s.conn, s.r = tc, bufio.NewReader(tc)
}

func serve(t *testing.T, implicit bool, script func(s *session)) (*fakeServer, *x509.CertPool) {
	t.Helper()
	cert, pool := testCert(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fakeServer{addr: ln.Addr().(*net.TCPAddr), done: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); <-srv.done })
	go func() {
		defer close(srv.done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s := &session{t: t, conn: c, r: bufio.NewReader(c), srv: srv, cert: cert}
		if implicit {
			s.startTLS()
		}
		script(s)
	}()
	return srv, pool
}

func (f *fakeServer) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func (f *fakeServer) config(pool *x509.CertPool) Config {
	return Config{Host: "127.0.0.1", Port: f.addr.Port, TLS: Implicit, Username: "alice", Password: "s3cret", RootCAs: pool, Timeout: 10 * time.Second}
}

// greetAndLogin plays the greeting and a LOGIN of alice/s3cret.
func (s *session) greetAndLogin() {
	s.send("* OK [CAPABILITY IMAP4rev1 AUTH=LOGIN] fake ready")
	tag := s.tagOf(s.expect(`C001 LOGIN "alice" "s3cret"`))
	s.send(tag + " OK logged in")
}

// tagOf returns the tag of a command line.
func (s *session) tagOf(line string) string {
	tag, _, _ := strings.Cut(line, " ")
	return tag
}

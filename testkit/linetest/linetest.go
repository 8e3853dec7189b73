// Package linetest serves scripted line protocols (SMTP, IMAP) on loopback
// for transcript tests: a script plays the server's side of one connection
// line by line, optionally over TLS with a certificate made for the test,
// and every line the client sent is recorded.
package linetest

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

// Cert makes a self-signed certificate for 127.0.0.1 and localhost and the
// pool that trusts it.
func Cert(t testing.TB) (tls.Certificate, *x509.CertPool) {
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

// Server is a scripted server on loopback for one client connection.
type Server struct {
	Addr *net.TCPAddr
	mu   sync.Mutex
	got  []string
	done chan struct{}
}

// Session is the server's side of the connection, as the script sees it.
type Session struct {
	T    testing.TB
	Conn net.Conn
	R    *bufio.Reader
	srv  *Server
	cert tls.Certificate
}

// Serve listens on loopback and runs script for the first connection,
// first in TLS when implicit. It returns the server and the pool that
// trusts its certificate; the test's end waits for the script.
func Serve(t testing.TB, implicit bool, script func(s *Session)) (*Server, *x509.CertPool) {
	t.Helper()
	cert, pool := Cert(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Addr: ln.Addr().(*net.TCPAddr), done: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); <-srv.done })
	go func() {
		defer close(srv.done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s := &Session{T: t, Conn: c, R: bufio.NewReader(c), srv: srv, cert: cert}
		if implicit {
			s.StartTLS()
		}
		script(s)
	}()
	return srv, pool
}

// Wait waits until the script has returned.
func (f *Server) Wait() { <-f.done }

// Lines returns every line the client sent so far.
func (f *Server) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// Send writes lines, each ended by CRLF.
func (s *Session) Send(lines ...string) {
	for _, l := range lines {
		s.Conn.Write([]byte(l + "\r\n"))
	}
}

// Recv reads one line from the client ("" at EOF) and records it.
func (s *Session) Recv() string {
	l, err := s.R.ReadString('\n')
	l = strings.TrimRight(l, "\r\n")
	if err != nil && l == "" {
		return ""
	}
	s.srv.mu.Lock()
	s.srv.got = append(s.srv.got, l)
	s.srv.mu.Unlock()
	return l
}

// Expect reads one line and fails the test unless it starts with prefix
// (case aside).
func (s *Session) Expect(prefix string) string {
	l := s.Recv()
	if !strings.HasPrefix(strings.ToUpper(l), strings.ToUpper(prefix)) {
		s.T.Errorf("client sent %q; want %q...", l, prefix)
	}
	return l
}

// StartTLS wraps the connection in TLS, as the server side.
func (s *Session) StartTLS() {
	tc := tls.Server(s.Conn, &tls.Config{Certificates: []tls.Certificate{s.cert}})
	if err := tc.Handshake(); err != nil {
		s.T.Logf("server handshake: %v", err)
	}
	s.Conn, s.R = tc, bufio.NewReader(tc)
}

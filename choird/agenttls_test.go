package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifies serves TLS with the pair on loopback and reports whether a
// client trusting only caPEM accepts it for host.
func verifies(t *testing.T, certFile, keyFile string, caPEM []byte, host string) error {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	defer srv.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA is not PEM")
	}
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: host})
	if err == nil {
		conn.Close()
	}
	return err
}

func TestAgentTLS(t *testing.T) {
	home := t.TempDir()
	cert, key, ca, err := agentTLS(home, "172.17.0.1")
	if err != nil {
		t.Fatalf("agentTLS() = %v", err)
	}
	if err := verifies(t, cert, key, ca, "172.17.0.1"); err != nil {
		t.Errorf("an agent trusting the CA refuses choird's certificate for 172.17.0.1: %v", err)
	}
	if err := verifies(t, cert, key, ca, "10.9.9.9"); err == nil {
		t.Error("the certificate is accepted for an address it was not made for")
	}
	for _, f := range []string{caKeyFile, serverKeyFile} {
		fi, err := os.Stat(filepath.Join(home, tlsDir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, fi.Mode().Perm())
		}
	}

	// Again for the same address: the same files, nothing made anew.
	before, _ := os.ReadFile(cert)
	cert2, _, ca2, err := agentTLS(home, "172.17.0.1")
	after, _ := os.ReadFile(cert2)
	if err != nil || !bytes.Equal(before, after) || !bytes.Equal(ca, ca2) {
		t.Errorf("a second agentTLS() made new files (err %v)", err)
	}

	// Another address: a new server certificate from the same CA.
	cert3, key3, ca3, err := agentTLS(home, "choird.internal")
	if err != nil || !bytes.Equal(ca, ca3) {
		t.Fatalf("agentTLS(new host) = %v; want the same CA", err)
	}
	if err := verifies(t, cert3, key3, ca3, "choird.internal"); err != nil {
		t.Errorf("certificate for a DNS name: %v", err)
	}

	// A CA whose key does not match is refused, saying what to do.
	os.WriteFile(filepath.Join(home, tlsDir, caKeyFile), []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600)
	if _, _, _, err := agentTLS(home, "172.17.0.1"); err == nil || !strings.Contains(err.Error(), "remove both") {
		t.Errorf("agentTLS(broken CA key) = %v; want a refusal saying to remove both", err)
	}
}

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
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

func TestGatewayOf(t *testing.T) {
	withConfig := func(subnet, gw string) docker.Network {
		var n docker.Network
		n.Options = map[string]string{bridgeNameOption: "docker0"}
		n.IPAM.Config = append(n.IPAM.Config, struct{ Subnet, Gateway string }{subnet, gw})
		return n
	}
	host := func(addrs ...string) func(string) ([]net.Addr, error) {
		return func(name string) ([]net.Addr, error) {
			if name != "docker0" {
				return nil, errors.New("no such interface")
			}
			var out []net.Addr
			for _, a := range addrs {
				ip, sn, _ := net.ParseCIDR(a)
				out = append(out, &net.IPNet{IP: ip, Mask: sn.Mask})
			}
			return out, nil
		}
	}
	tests := []struct {
		name string
		n    docker.Network
		host func(string) ([]net.Addr, error)
		want string // "" means an error
	}{
		{"IPAM gateway", withConfig("172.17.0.0/16", "172.17.0.1"), host(), "172.17.0.1"},
		{"from the bridge interface", withConfig("172.17.0.0/16", ""), host("fe80::1/64", "10.9.0.1/24", "172.17.0.1/16"), "172.17.0.1"},
		{"interface outside the subnet", withConfig("172.18.0.0/16", ""), host("172.17.0.1/16"), ""},
		{"no interface", withConfig("172.17.0.0/16", ""), func(string) ([]net.Addr, error) { return nil, errors.New("gone") }, ""},
		{"nothing known", docker.Network{}, host("172.17.0.1/16"), ""},
	}
	for _, tt := range tests {
		got, err := gatewayOf(tt.n, tt.host)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("%s: gatewayOf() = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestClientCertificates: a session's client certificate is signed by the
// same CA as choird's server certificate, verifies for client use only,
// names the session and its agent, and lasts ClientCertTTL.
func TestClientCertificates(t *testing.T) {
	home := t.TempDir()
	ca, err := loadAgentCA(home)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.NewClientCert("sess-1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("the certificate and key do not pair: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not verify for client use: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a session's client certificate verifies as a server's")
	}
	if leaf.Subject.CommonName != "sess-1" || strings.Join(leaf.Subject.OrganizationalUnit, ",") != "alice" {
		t.Errorf("subject %v; want CN sess-1, OU alice", leaf.Subject)
	}
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life < ClientCertTTL || life > ClientCertTTL+2*time.Minute {
		t.Errorf("the certificate lasts %s; want %s", life, ClientCertTTL)
	}
	// The server's certificate comes from the same CA, so one agent trust
	// file serves both directions.
	_, _, caPEM, err := agentTLS(home, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})) {
		t.Error("the client certificates' CA is not the one the server certificate's")
	}
}

package rpc

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA issues client certificates as choird's agent CA does.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	ttl  time.Duration

	mu     sync.Mutex
	issued []*x509.Certificate
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool, ttl: time.Hour}
}

func (ca *testCA) IssueClientCert(sessionID, agentID string, pub crypto.PublicKey) ([]byte, error) {
	return ca.issue(sessionID, pub, time.Now().Add(-time.Minute), time.Now().Add(ca.ttl))
}

func (ca *testCA) issue(sessionID string, pub crypto.PublicKey, from, until time.Time) ([]byte, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(100 + len(ca.issued))), Subject: pkix.Name{CommonName: SessionCertName(sessionID)},
		NotBefore: from, NotAfter: until, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, err
	}
	c, _ := x509.ParseCertificate(der)
	ca.issued = append(ca.issued, c)
	return der, nil
}

// clientFiles writes a key and the certificate ca issues for it, valid
// from..until, as the files choird gives an agent.
func (ca *testCA) clientFiles(t testing.TB, sessionID string, from, until time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := ca.issue(sessionID, &key.PublicKey, from, until)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// mtlsServer serves srv on a mutual-TLS listener trusting clients of ca
// and returns its endpoint, the pool trusting the server, and the serial
// numbers of the client certificates each call arrived with.
func mtlsServer(t *testing.T, srv *Server, ca *testCA) (endpoint string, roots *x509.CertPool, seen func() []int64) {
	t.Helper()
	cert, pool := selfSigned(t)
	dir := t.TempDir()
	kder, _ := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	certFile, keyFile := filepath.Join(dir, "srv.pem"), filepath.Join(dir, "srv-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	l, err := ListenTCP("127.0.0.1:0", certFile, keyFile, ca.pool)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var serials []int64
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			mu.Lock()
			serials = append(serials, r.TLS.PeerCertificates[0].SerialNumber.Int64())
			mu.Unlock()
		}
		srv.ServeHTTP(w, r)
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return "https://" + l.Addr().String(), pool, func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), serials...)
	}
}

func dialMTLS(t *testing.T, endpoint string, roots *x509.CertPool, cc *ClientCert, session, token string) *Client {
	t.Helper()
	conf := &tls.Config{RootCAs: roots}
	if cc != nil {
		conf.GetClientCertificate = cc.GetClientCertificate
	}
	c, err := Dial(Options{Transport: TransportHTTP, Endpoint: endpoint, TLS: conf, SessionID: session, LeaseToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestMutualTLS: on a listener with client CAs a call needs both the lease
// token and a client certificate of that CA naming the token's session; a
// certificate of another session, of another CA or expired, or none, opens
// nothing.
func TestMutualTLS(t *testing.T) {
	ca := newTestCA(t, "agents CA")
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Open("s1", testAgent, "t1")
	srv.Open("s2", testAgent, "t2")
	endpoint, roots, _ := mtlsServer(t, srv, ca)
	hello := func(c *Client) error {
		_, err := c.InitHello(context.Background(), InitHelloReq{AgentID: testAgent})
		return err
	}
	now := time.Now()
	load := func(certFile, keyFile string) *ClientCert {
		cc, err := LoadClientCert(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	s1 := load(ca.clientFiles(t, "s1", now.Add(-time.Minute), now.Add(time.Hour)))
	if err := hello(dialMTLS(t, endpoint, roots, s1, "s1", "t1")); err != nil {
		t.Fatalf("s1's certificate and token: %v", err)
	}
	var rerr *Error
	if err := hello(dialMTLS(t, endpoint, roots, s1, "s2", "t2")); !errors.As(err, &rerr) || rerr.Status != http.StatusUnauthorized {
		t.Errorf("s1's certificate with s2's token = %v; want 401", err)
	}
	if err := hello(dialMTLS(t, endpoint, roots, s1, "s1", "t2")); !errors.As(err, &rerr) || rerr.Status != http.StatusUnauthorized {
		t.Errorf("s1's certificate with a wrong token = %v; want 401", err)
	}
	if err := hello(dialMTLS(t, endpoint, roots, nil, "s1", "t1")); err == nil || errors.As(err, &rerr) {
		t.Errorf("no client certificate = %v; want the handshake refused", err)
	}
	other := newTestCA(t, "another CA")
	if err := hello(dialMTLS(t, endpoint, roots, load(other.clientFiles(t, "s1", now.Add(-time.Minute), now.Add(time.Hour))), "s1", "t1")); err == nil || errors.As(err, &rerr) {
		t.Errorf("a certificate of another CA = %v; want the handshake refused", err)
	}
	if err := hello(dialMTLS(t, endpoint, roots, load(ca.clientFiles(t, "s1", now.Add(-2*time.Hour), now.Add(-time.Minute))), "s1", "t1")); err == nil || errors.As(err, &rerr) {
		t.Errorf("an expired certificate = %v; want the handshake refused", err)
	}
	srv.Close("s1")
	if err := hello(dialMTLS(t, endpoint, roots, s1, "s1", "t1")); !errors.As(err, &rerr) || rerr.Status != http.StatusUnauthorized {
		t.Errorf("s1's certificate after its session closed = %v; want 401", err)
	}
}

// TestRenewCert: an agent renews its certificate over its authenticated
// connection with a key it makes; the next connection presents the new
// one; a request that is not a valid CSR for an ECDSA key is refused, and a
// server without an issuer answers 404.
func TestRenewCert(t *testing.T) {
	ca := newTestCA(t, "agents CA")
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Open("s1", testAgent, "t1")
	endpoint, roots, seen := mtlsServer(t, srv, ca)
	now := time.Now()
	cc, err := LoadClientCert(ca.clientFiles(t, "s1", now.Add(-time.Minute), now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(-time.Minute).Add(61 * time.Minute / 2); cc.RenewAt().Sub(want).Abs() > time.Second {
		t.Errorf("RenewAt = %v; want half-way through the certificate's life, %v", cc.RenewAt(), want)
	}
	c := dialMTLS(t, endpoint, roots, cc, "s1", "t1")
	var rerr *Error
	if err := cc.Renew(context.Background(), c); !errors.As(err, &rerr) || rerr.Status != http.StatusNotFound {
		t.Fatalf("RENEW_CERT without an issuer = %v; want 404", err)
	}
	srv.Certs = ca
	ca.ttl = 2 * time.Hour
	before := cc.NotAfter()
	if err := cc.Renew(context.Background(), c); err != nil {
		t.Fatalf("Renew = %v", err)
	}
	if !cc.NotAfter().After(before) {
		t.Errorf("after Renew the certificate expires %v; want after %v", cc.NotAfter(), before)
	}
	newSerial := ca.issued[len(ca.issued)-1].SerialNumber.Int64()
	c.Close() // the next call opens a connection with the new certificate
	if _, err := c.InitHello(context.Background(), InitHelloReq{AgentID: testAgent}); err != nil {
		t.Fatalf("a call with the renewed certificate: %v", err)
	}
	if got := seen(); got[len(got)-1] != newSerial {
		t.Errorf("the calls arrived with certificates %v; want the last with the renewed one, %d", got, newSerial)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaCSR, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, rsaKey)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, ecKey)
	forged := append([]byte(nil), good...)
	forged[len(forged)-5] ^= 0xff // the signature
	for name, csr := range map[string]string{
		"garbage":             "hello",
		"a certificate":       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})),
		"an RSA key":          string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: rsaCSR})),
		"a broken signature":  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: forged})),
		"a request too large": strings.Repeat("x", maxCSRBytes+1),
	} {
		n := len(ca.issued)
		resp, err := renewRaw(c, csr)
		if !errors.As(err, &rerr) || rerr.Status != http.StatusBadRequest || len(ca.issued) != n {
			t.Errorf("RENEW_CERT with %s = %+v, %v; want 400 and nothing issued", name, resp, err)
		}
	}
}

func renewRaw(c *Client, csr string) (RenewCertResp, error) {
	return call[RenewCertResp](context.Background(), c, VerbRenewCert, RenewCertReq{CSR: csr})
}

package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"choir/internal/rpc"
)

// The HTTP transport's own certificates (§12.4: server-only TLS,
// self-signed for a single host), kept in <home>/tls: a CA that agents
// trust (mounted read-only into each container) and choird's server
// certificate signed by it for the address agents dial. The keys are
// 0600 and never leave the home.
const (
	tlsDir        = "tls"
	caCertFile    = "agents-ca.pem"
	caKeyFile     = "agents-ca-key.pem"
	serverCrtFile = "agents.pem"
	serverKeyFile = "agents-key.pem"
	// A server certificate is made again when it would expire sooner.
	renewBefore = 30 * 24 * time.Hour
)

// agentTLS returns the certificate and key files choird serves agents
// with, and the CA they trust, making what is missing: a CA (valid ten
// years) once, and a server certificate (one year) for host whenever the
// one on disk does not name it or expires within renewBefore.
func agentTLS(homeDir, host string) (certFile, keyFile string, caPEM []byte, err error) {
	dir := filepath.Join(homeDir, tlsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", nil, fmt.Errorf("create %s: %w", dir, err)
	}
	caCert, caKey, caPEM, err := loadOrMakeCA(dir)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, serverCrtFile), filepath.Join(dir, serverKeyFile)
	if serverCertFits(certFile, keyFile, host, caCert) {
		return certFile, keyFile, caPEM, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "choird"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", "", nil, fmt.Errorf("sign choird's certificate: %w", err)
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", marshalKey(key), 0o600); err != nil {
		return "", "", nil, err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, caPEM, nil
}

// ClientCertTTL is how long a session's client certificate lasts (issue
// 26's mutual TLS for agents on other hosts): choir-agent renews it half-way
// (RENEW_CERT), so an agent cut off from choird for longer than that, or a
// certificate copied out of a box, is dead within a day at most.
const ClientCertTTL = 12 * time.Hour

// agentCA is the agents' CA held in memory to sign sessions' client
// certificates (rpc.CertIssuer); its key never leaves choird.
type agentCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	ttl  time.Duration
}

// loadAgentCA loads the CA of <home>/tls, making it when missing.
func loadAgentCA(homeDir string) (*agentCA, error) {
	dir := filepath.Join(homeDir, tlsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	cert, key, _, err := loadOrMakeCA(dir)
	if err != nil {
		return nil, err
	}
	return &agentCA{cert: cert, key: key, ttl: ClientCertTTL}, nil
}

// Pool is the pool of client CAs a mutual-TLS listener trusts.
func (ca *agentCA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// IssueClientCert signs pub as the client certificate of a session,
// valid for the CA's ttl from now (a minute back, for clocks a little
// behind), never past the CA's own end.
func (ca *agentCA) IssueClientCert(sessionID, agentID string, pub crypto.PublicKey) ([]byte, error) {
	now := time.Now()
	until := now.Add(ca.ttl)
	if until.After(ca.cert.NotAfter) {
		until = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: rpc.SessionCertName(sessionID), OrganizationalUnit: []string{agentID}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign session %s's client certificate: %w", sessionID, err)
	}
	return der, nil
}

// NewClientCert makes a key and its certificate for a session's box: the
// PEM files the runtime hands to choir-agent (--tls-cert, --tls-key).
func (ca *agentCA) NewClientCert(sessionID, agentID string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := ca.IssueClientCert(sessionID, agentID, &key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: marshalKey(key)}), nil
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if err1 == nil && err2 == nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s and %s do not make a key pair (%v): remove both and choird makes a new CA", certPath, keyPath, err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", certPath, err)
		}
		key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
		if !ok || !cert.IsCA || time.Now().After(cert.NotAfter) {
			return nil, nil, nil, fmt.Errorf("%s is not a usable CA (expired, or not one choird made): remove it and %s, and choird makes a new one", certPath, keyPath)
		}
		return cert, key, certPEM, nil
	}
	if !errors.Is(err1, os.ErrNotExist) && err1 != nil {
		return nil, nil, nil, err1
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "choird agents CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("make the agents' CA: %w", err)
	}
	cert, _ := x509.ParseCertificate(der)
	if err := writePEM(keyPath, "EC PRIVATE KEY", marshalKey(key), 0o600); err != nil {
		return nil, nil, nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// serverCertFits reports whether the certificate on disk is one ca signed,
// matches its key, names host and is not about to expire.
func serverCertFits(certFile, keyFile, host string, ca *x509.Certificate) bool {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return false
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || cert.CheckSignatureFrom(ca) != nil || time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(cert.IPAddresses, ip.Equal)
	}
	return slices.Contains(cert.DNSNames, host)
}

func marshalKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return der
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// writePEM writes one PEM block atomically with mode.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tls-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := pem.Encode(tmp, &pem.Block{Type: typ, Bytes: der}); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

package rpc

import (
	"context"
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
	"net/http"
	"sync"
	"time"
)

// Mutual TLS for agents on other hosts (issue 26): choird's own CA issues
// each such session a short-lived client certificate naming it, which the
// agent presents on every connection of the HTTP transport; a listener
// made with client CAs (ListenTCP) admits no connection without one, and
// the server admits a call only when the certificate names the session the
// lease token opens (authenticate). Before the certificate expires the
// agent renews it over that same authenticated connection (RENEW_CERT),
// sending a request for a key it made: the new key never leaves the agent.

// VerbRenewCert renews the session's client certificate. A verb §12.5
// does not name; choird serves it when the Server has a CertIssuer, and a
// 404 means it issues none.
const VerbRenewCert Verb = "RENEW_CERT"

// RenewCertReq is RENEW_CERT's payload: a PKCS #10 certificate request
// (PEM, "CERTIFICATE REQUEST") for the agent's new key, self-signed by it.
// Its subject is ignored: choird names the session itself.
type RenewCertReq struct {
	CSR string `json:"csr"`
}

func (r RenewCertReq) check() error {
	if len(r.CSR) > maxCSRBytes {
		return tooBig("csr", len(r.CSR), maxCSRBytes, "bytes")
	}
	return nil
}

// maxCSRBytes bounds a request: a P-256 or P-384 CSR in PEM is under 1 KiB.
const maxCSRBytes = 8 << 10

// RenewCertResp carries the new certificate (PEM) and when it expires.
type RenewCertResp struct {
	Cert     string    `json:"cert"`
	NotAfter time.Time `json:"not_after"`
}

// CertIssuer signs client certificates for sessions (choird's agent CA).
type CertIssuer interface {
	// IssueClientCert returns a certificate (DER) for pub naming
	// sessionID (SessionCertName) as a client of choird.
	IssueClientCert(sessionID, agentID string, pub crypto.PublicKey) ([]byte, error)
}

// SessionCertName is the subject common name of a session's client
// certificate: the session id, which the server compares with the one the
// lease token opens.
func SessionCertName(sessionID string) string { return sessionID }

// certBinding checks a call's TLS peer against the session it
// authenticated as: "" when the connection carries no verified client
// certificate (a listener without client CAs, or not TLS), else an error
// when the certificate names another session.
func certBinding(st *tls.ConnectionState, sessionID string) error {
	if st == nil || len(st.VerifiedChains) == 0 {
		return nil
	}
	if name := st.VerifiedChains[0][0].Subject.CommonName; name != SessionCertName(sessionID) {
		return fmt.Errorf("the client certificate names session %q, not %q", name, sessionID)
	}
	return nil
}

// renewCert serves RENEW_CERT for the authenticated session.
func (s *Server) renewCert(ctx context.Context, req RenewCertReq) (RenewCertResp, error) {
	if s.Certs == nil {
		return RenewCertResp{}, Errorf(http.StatusNotFound, CodeUnknownVerb, "unknown verb %q: this choird issues no client certificates", VerbRenewCert)
	}
	c, _ := CallFrom(ctx)
	s.mu.Lock()
	sess := s.m[c.SessionID]
	s.mu.Unlock()
	if sess == nil {
		return RenewCertResp{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized}
	}
	block, _ := pem.Decode([]byte(req.CSR))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return RenewCertResp{}, Errorf(http.StatusBadRequest, CodeBadRequest, "csr: want one PEM block of type CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return RenewCertResp{}, Errorf(http.StatusBadRequest, CodeBadRequest, "csr: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return RenewCertResp{}, Errorf(http.StatusBadRequest, CodeBadRequest, "csr: its signature does not verify with its key: %v", err)
	}
	if k, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok || (k.Curve != elliptic.P256() && k.Curve != elliptic.P384()) {
		return RenewCertResp{}, Errorf(http.StatusBadRequest, CodeBadRequest, "csr: want an ECDSA P-256 or P-384 key")
	}
	der, err := s.Certs.IssueClientCert(c.SessionID, sess.agentID, csr.PublicKey)
	if err != nil {
		return RenewCertResp{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return RenewCertResp{}, err
	}
	return RenewCertResp{Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), NotAfter: cert.NotAfter}, nil
}

// RenewCert asks choird for a certificate for key (the agent's new key).
func (c *Client) RenewCert(ctx context.Context, key crypto.Signer) (RenewCertResp, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: c.sessionID}}, key)
	if err != nil {
		return RenewCertResp{}, fmt.Errorf("rpc %s: make the request: %w", VerbRenewCert, err)
	}
	return call[RenewCertResp](ctx, c, VerbRenewCert, RenewCertReq{CSR: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))})
}

// ClientCert is an agent's current client certificate, presented on every
// new connection (its GetClientCertificate) and replaced by Renew.
type ClientCert struct {
	mu   sync.Mutex
	cert tls.Certificate
	leaf *x509.Certificate
}

// LoadClientCert reads the certificate and key files choird gave the agent.
func LoadClientCert(certFile, keyFile string) (*ClientCert, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("the client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &ClientCert{cert: pair, leaf: pair.Leaf}, nil
}

// GetClientCertificate is tls.Config's: the current certificate.
func (cc *ClientCert) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c := cc.cert
	return &c, nil
}

// NotAfter is when the current certificate expires.
func (cc *ClientCert) NotAfter() time.Time {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.leaf.NotAfter
}

// RenewAt is when the current certificate should be renewed: half-way
// through its life, so a failed renewal has the other half to retry.
func (cc *ClientCert) RenewAt() time.Time {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.leaf.NotBefore.Add(cc.leaf.NotAfter.Sub(cc.leaf.NotBefore) / 2)
}

// Renew makes a new key, has choird certify it through c and presents the
// result from the next connection on. The connections already open keep
// the certificate they were made with, which stays valid until it expires.
func (cc *ClientCert) Renew(ctx context.Context, c *Client) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	resp, err := c.RenewCert(ctx, key)
	if err != nil {
		return err
	}
	block, _ := pem.Decode([]byte(resp.Cert))
	if block == nil {
		return errors.New("rpc RENEW_CERT: the answer holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("rpc RENEW_CERT: %w", err)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return errors.New("rpc RENEW_CERT: the certificate is not for the key sent")
	}
	cc.mu.Lock()
	cc.cert = tls.Certificate{Certificate: [][]byte{block.Bytes}, PrivateKey: key, Leaf: leaf}
	cc.leaf = leaf
	cc.mu.Unlock()
	return nil
}

// KeepRenewed renews cc at each RenewAt until ctx ends, retrying a failed
// renewal every retry (told to failed) while the certificate lasts.
func (cc *ClientCert) KeepRenewed(ctx context.Context, c *Client, retry time.Duration, failed func(error)) {
	for {
		wait := time.Until(cc.RenewAt())
		for {
			t := time.NewTimer(max(wait, 0))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			err := cc.Renew(ctx, c)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			failed(err)
			wait = retry
		}
	}
}

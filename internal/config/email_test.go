package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseCAPEM(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	one := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	if certs, err := ParseCAPEM(one + one); err != nil || len(certs) != 2 || certs[0].Subject.CommonName != "mail CA" {
		t.Errorf("ParseCAPEM(two certificates) = %d, %v", len(certs), err)
	}
	for _, bad := range []string{"", "junk", one + "trailing junk", one[:len(one)/2]} {
		if _, err := ParseCAPEM(bad); err == nil || !strings.Contains(err.Error(), "PEM certificates") {
			t.Errorf("ParseCAPEM(%.20q) = %v; want a refusal", bad, err)
		}
	}
}

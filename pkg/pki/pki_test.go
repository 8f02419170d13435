package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"
)

// A CA, and a server certificate it signs, verify as a TLS client would.
func TestIssue(t *testing.T) {
	now := time.Now()
	caPEM, caKeyPEM, err := Issue(&x509.Certificate{Subject: pkix.Name{CommonName: "ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca := parse(t, caPEM)
	kb, _ := pem.Decode(caKeyPEM)
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	srvPEM, _, err := Issue(&x509.Certificate{Subject: pkix.Name{CommonName: "bundle"}, DNSNames: []string{"bundle.site"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := parse(t, srvPEM).Verify(x509.VerifyOptions{DNSName: "bundle.site", Roots: roots}); err != nil {
		t.Error(err)
	}
	if ca.SerialNumber.Cmp(parse(t, srvPEM).SerialNumber) == 0 {
		t.Error("two certificates, one serial")
	}
}

func parse(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Package pki issues the X.509 certificates gpukit makes itself: the
// platform's self-signed ingress certificate, an offline bundle's registry
// CA and the certificate its host serves with. One way to make a key and a
// certificate from a template, so that every certificate gpukit writes has
// the same key type and serial size.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"time"
)

// Issue makes a new ECDSA P-256 key and the certificate of tmpl for it,
// with a random 127-bit serial, signed by parent with parentKey, or by
// itself when parent is nil. Both come back as PEM.
func Issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// IngressCertificate is a self-signed certificate for the domain and every
// name under it (two years), as PEM: the platform's ingress certificate
// where the operator gives none, on Kubernetes and on swarm.
func IngressCertificate(domain string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "*." + domain, Organization: []string{"gpukit"}},
		DNSNames:    []string{"*." + domain, domain},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(2 * 365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, nil, nil)
}

// CoversDomain: the PEM certificate names *.domain and is valid for 30
// days more (a kept ingress certificate; else a new one is made).
func CoversDomain(certPEM []byte, domain string, now time.Time) bool {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return false
	}
	return slices.Contains(c.DNSNames, "*."+domain) && now.Add(30*24*time.Hour).Before(c.NotAfter)
}

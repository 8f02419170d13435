// Package bundlehost serves an offline bundle from one of the inventory's
// hosts (spec.bundle) and points every host's package manager at it: the
// bundle host's phases, and the certificate its registry serves with.
package bundlehost

import (
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/pki"
)

// The bundle's registry is served over TLS with a certificate of the CA
// the bundle makes on its first run: the CA's certificate is public
// (key/registry-ca.pem: containerd trusts it for the mirror only, as
// spec.mirrors.registryCAFile), its key stays in private/.
const (
	caKeyFile = "private/registry-ca-key.pem"
	// caLifetime is long: a site's bundle host serves for years, and a
	// certificate that expires takes its nodes' image pulls with it.
	caLifetime = 10 * 365 * 24 * time.Hour
)

// EnsureCA makes the bundle's registry CA in dir, named after cluster,
// unless the bundle has one.
func EnsureCA(dir, cluster string) error {
	if _, _, err := readCA(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	now := time.Now()
	certPEM, keyPEM, err := pki.Issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "gpukit bundle CA of " + cluster}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}, nil, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, bundlefs.PrivateDir), 0o700); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, caKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(bundlefs.RegistryCAFile)), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, bundlefs.RegistryCAFile), certPEM, 0o644)
}

func readCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, bundlefs.RegistryCAFile))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s: the registry CA is not PEM", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	return cert, key, err
}

// ServerCertificate is the registry's certificate and key (PEM) for a bundle
// host at address (an IP or a DNS name), signed by the bundle's CA. It is
// kept in private/, so that serving again sends the same one.
func ServerCertificate(dir, address string) (cert, key []byte, err error) {
	if cert, key, ok := existingCertificate(dir, address); ok {
		return cert, key, nil
	}
	certFile, keyFile := certificateFiles(dir, address)
	ca, caKey, err := readCA(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("the bundle's registry CA: %w (made by gpukit bundle create)", err)
	}
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: address}, NotBefore: time.Now().Add(-time.Hour), NotAfter: ca.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(address); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{address}
	}
	if cert, key, err = pki.Issue(tmpl, ca, caKey); err != nil {
		return nil, nil, err
	}
	if err := atomicfile.Write(keyFile, key, 0o600); err != nil {
		return nil, nil, err
	}
	if err := atomicfile.Write(certFile, cert, 0o600); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func certificateFiles(dir, address string) (cert, key string) {
	return filepath.Join(dir, bundlefs.PrivateDir, "registry-"+address+".pem"), filepath.Join(dir, bundlefs.PrivateDir, "registry-"+address+"-key.pem")
}

// existingCertificate is the certificate ServerCertificate made for address
// before, if it did: what a dry-run compares, making none.
func existingCertificate(dir, address string) (cert, key []byte, ok bool) {
	certFile, keyFile := certificateFiles(dir, address)
	cert, cerr := os.ReadFile(certFile)
	key, kerr := os.ReadFile(keyFile)
	return cert, key, cerr == nil && kerr == nil
}

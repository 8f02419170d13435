package lab

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
)

// SecureRegistry is the lab registry's images behind TLS and a login, as a site's private
// registry: its certificate is signed by a CA of its own, which no host trusts.
type SecureRegistry struct {
	// Address is 10.251.0.1:5443.
	Address string
	// CAFile is the CA's certificate (PEM), for spec.mirrors.registryCAFile.
	CAFile string
	// Username and PasswordFile are the login (the file holds the password alone).
	Username, PasswordFile string
	// Password is the password itself, for tests that search for it.
	Password string
}

// SecureRegistry starts the lab registry (Registry) and its TLS twin (lab.sh registry tls) with
// a CA, certificate and login made once per lab directory and kept with the registry's data.
func (l *Lab) SecureRegistry(t testing.TB) SecureRegistry {
	t.Helper()
	l.Registry(t)
	dir := filepath.Join(l.LabDir(), "registry", "tls")
	if err := makeRegistryTLS(dir, l.Bridge); err != nil {
		t.Fatalf("lab: TLS material for the registry: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := run(ctx, l.script, l.id, "registry", "tls", dir)
	if err != nil {
		t.Fatalf("lab %s: registry tls: %v\n%s", l.id, err, Tail(out))
	}
	pw, err := os.ReadFile(filepath.Join(dir, "password"))
	if err != nil {
		t.Fatal(err)
	}
	return SecureRegistry{Address: lastLine(out), CAFile: filepath.Join(dir, "ca.pem"), Username: registryUser,
		PasswordFile: filepath.Join(dir, "password"), Password: strings.TrimSpace(string(pw))}
}

const registryUser = "gpukit-lab"

// makeRegistryTLS writes dir's ca.pem, cert.pem (for ip), key.pem, htpasswd and password,
// unless dir exists: made in a directory of its own and renamed into place, so two tests
// that start at once end up with one set.
func makeRegistryTLS(dir, ip string) error {
	if _, err := os.Stat(filepath.Join(dir, "htpasswd")); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tls-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpukit lab registry CA (test only)"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IPAddresses: []net.IP{net.ParseIP(ip)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	password := "lab-" + rand.Text()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.pem":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"htpasswd": []byte(registryUser + ":" + string(hash) + "\n"),
		"password": []byte(password + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) && !isNotEmpty(err) {
		return err
	}
	return nil
}

// isNotEmpty: rename onto a directory another test made first.
func isNotEmpty(err error) bool { return strings.Contains(err.Error(), "directory not empty") }

// PushChart pushes the chart archive at path to the TLS registry as `helm push` would, below
// repo (oci://Address/repo/NAME:VERSION), and returns that oci:// base (oci://Address/repo).
func (r SecureRegistry) PushChart(t testing.TB, repo, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ca, err := os.ReadFile(r.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: roots}
	transport.Proxy = nil
	client, err := registry.NewClient(registry.ClientOptHTTPClient(&http.Client{Transport: transport, Timeout: time.Minute}),
		registry.ClientOptBasicAuth(r.Username, r.Password), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Address + "/" + repo + "/" + ch.Metadata.Name + ":" + strings.ReplaceAll(ch.Metadata.Version, "+", "_")
	if _, err := client.Push(data, ref); err != nil {
		t.Fatalf("lab: push chart %s: %v", ref, err)
	}
	return "oci://" + r.Address + "/" + repo
}

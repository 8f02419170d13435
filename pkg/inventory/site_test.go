package inventory

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"strings"
	"testing"
	"time"
)

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "site CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// The registry mirror's CA and password are read once, before a run: each
// problem names its line and field and never the secret; the login becomes
// a Basic header, and every form of it is a secret for the redactor.
func TestReadSite(t *testing.T) {
	ca := testCA(t)
	doc := strings.Replace(minimal(""), "spec:\n", "spec:\n  mirrors:\n    registry: 10.0.0.5:5443\n    registryCAFile: /site/ca.pem\n    registryLogin: {username: robot$ci, password: {env: REG_PW}}\n", 1)
	for _, tt := range []struct {
		name  string
		files map[string][]byte
		env   map[string]string
		err   string
	}{
		{"ok", map[string][]byte{"/site/ca.pem": ca}, map[string]string{"REG_PW": "s3cret-pw"}, ""},
		{"missing file and variable", nil, nil, "test.yaml:8:21: spec.mirrors.registryCAFile: CA file /site/ca.pem: file does not exist\ntest.yaml:9:51: spec.mirrors.registryLogin.password: secret from environment variable REG_PW: not set"},
		{"not PEM", map[string][]byte{"/site/ca.pem": []byte("hello")}, map[string]string{"REG_PW": "x"}, "no PEM certificate in it"},
		{"a private key", map[string][]byte{"/site/ca.pem": append(ca, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")...)}, map[string]string{"REG_PW": "x"}, `holds a "PRIVATE KEY" block`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := mustParse(t, doc)
			err := inv.ReadSite(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, func(p string) ([]byte, error) {
				if b, ok := tt.files[p]; ok {
					return b, nil
				}
				return nil, fs.ErrNotExist
			})
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := inv.RegistryAuthorization(); got != "Basic cm9ib3QkY2k6czNjcmV0LXB3" {
					t.Errorf("authorization %q", got)
				}
				if s := inv.SiteSecrets(); len(s) != 3 || s[0] != "s3cret-pw" || s[2] != "cm9ib3QkY2k6czNjcmV0LXB3" {
					t.Errorf("secrets %q", s)
				}
				if string(inv.Site.RegistryCA) != string(ca) {
					t.Error("CA not kept")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

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
	"os"
	"path/filepath"
	"slices"
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

// spec.bundle points every source at the bundle: its host's repositories,
// pinned to the bundle's key, its registry trusting the bundle's CA, its
// charts and Kubeflow's manifests on this machine; an incomplete bundle is
// refused before anything is touched.
func TestReadSiteBundle(t *testing.T) {
	dir := t.TempDir()
	ca := testCA(t)
	os.MkdirAll(filepath.Join(dir, "key"), 0o755)
	os.WriteFile(filepath.Join(dir, "key", "registry-ca.pem"), ca, 0o644)
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: offline}\nspec:\n  bundle: {dir: " + dir + ", host: cp-1}\n" +
		"  kubeflow: {enabled: true}\n  hosts:\n  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}\n"
	for _, tc := range []struct {
		name, manifest, err string
	}{
		{"complete", `{"kind": "Bundle", "complete": true, "fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567"}`, ""},
		{"incomplete", `{"kind": "Bundle", "complete": false, "missing": ["image x: gone"]}`, "the bundle in " + dir + " is not complete: 1 artifact(s) missing"},
		{"not a bundle", `{"kind": "Cluster"}`, "is not a gpukit bundle's manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(tc.manifest), 0o644)
			inv, err := Parse("offline.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			err = inv.ReadSite(func(string) (string, bool) { return "", false }, os.ReadFile)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "offline.yaml:5:") {
					t.Fatalf("error %v, want %q at spec.bundle", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := inv.Cluster.Spec.Mirrors
			fpr := []string{"0123456789ABCDEF0123456789ABCDEF01234567"}
			if m.NVIDIA != "http://10.0.0.1:8480/packages/nvidia/" || m.Kubernetes != "http://10.0.0.1:8480/packages/kubernetes/" ||
				m.Docker != "http://10.0.0.1:8480/packages/docker/" || m.Registry != "10.0.0.1:8443" || m.Charts != dir+"/charts" ||
				!slices.Equal(m.SigningKeys.NVIDIA, fpr) || !slices.Equal(m.SigningKeys.Docker, fpr) || string(inv.Site.RegistryCA) != string(ca) {
				t.Errorf("mirrors %+v", m)
			}
			if k := inv.Cluster.Spec.Kubeflow; k.Manifests != dir+"/kubeflow/manifests-"+k.Version+".tar.gz" {
				t.Errorf("kubeflow manifests %s", k.Manifests)
			}
		})
	}
}

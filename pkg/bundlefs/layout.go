// Package bundlefs is an offline bundle's directory as gpukit lays it out:
// its files' names, its manifest (every file's sha256), the check of a
// directory against it, the CA and certificate its registry serves with,
// and the handlers a bundle host serves it with. pkg/bundle makes bundles;
// the bundle host's phases and the daemon read them through this package.
package bundlefs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A bundle is a directory:
//
//	bundle.json          the manifest: every file's sha256 and size, what is missing
//	key/bundle.asc       the public key that signs the package repositories
//	key/registry-ca.pem  the CA of the certificate the bundle's registry serves with
//	private/             their keys (0600), never served nor copied to a host
//	packages/nvidia/     the repositories spec.mirrors.nvidia names, laid out as NVIDIA's
//	packages/kubernetes/ ... as pkgs.k8s.io's, packages/docker/ as Docker's
//	packages/os/FAMILY/  a flat repository of what hosts get from their distribution
//	charts/              NAME-VERSION.tgz and a Helm repository index
//	kubeflow/            the release's manifests, and its remote bases laid out by URL
//	images/              an OCI image layout, each image named by its full reference
const (
	ManifestFile  = "bundle.json"
	PublicKeyFile = "key/bundle.asc"
	PrivateDir    = "private"
	SecretKeyFile = "private/bundle-key.asc"
	PackagesDir   = "packages"
	ChartsDir     = "charts"
	KubeflowDir   = "kubeflow"
	ImagesDir     = "images"
	// RegistryCAFile is the CA of the certificate the bundle's registry
	// serves with: public, what containerd trusts for the mirror only.
	RegistryCAFile = "key/registry-ca.pem"
)

// KubeflowManifests is where a bundle keeps a Kubeflow release's manifests;
// KubeflowRemoteBases the remote bases they reach, laid out by URL.
func KubeflowManifests(version string) string {
	return KubeflowDir + "/manifests-" + version + ".tar.gz"
}

const KubeflowRemoteBases = KubeflowDir + "/remote-bases.tar.gz"

// Annotations name an image of the layout by its full reference: the OCI
// one, and containerd's (ctr import).
const (
	RefAnnotation           = "org.opencontainers.image.ref.name"
	ContainerdRefAnnotation = "io.containerd.image.name"
)

// ManifestKind and ManifestAPIVersion start a bundle's manifest.
const (
	ManifestKind       = "Bundle"
	ManifestAPIVersion = "gpukit.dev/v1alpha1"
)

// Manifest says what a bundle holds. A bundle is complete only when its
// manifest says so: a run that could not have everything writes one with
// Complete false and what is missing, and `gpukit bundle serve` refuses it.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Cluster    string `json:"cluster"`
	// Fingerprint is the key that signs the bundle's package repositories:
	// what hosts pin (spec.mirrors.signingKeys).
	Fingerprint string `json:"fingerprint"`
	Complete    bool   `json:"complete"`
	// Missing are the artifacts the run could not have, each with why.
	Missing []string `json:"missing,omitempty"`
	// Artifacts is the list the bundle was made from (pkg/bundle's).
	Artifacts json.RawMessage `json:"artifacts"`
	Files     []File          `json:"files"`
}

// File is one file of a bundle.
type File struct {
	Path   string `json:"path"`           // slash-separated, relative to the bundle
	Kind   string `json:"kind,omitempty"` // the artifact kind it belongs to: package, chart, kubeflow, image
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ReadManifest reads the manifest of the bundle at dir.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Kind != ManifestKind || m.APIVersion != ManifestAPIVersion {
		return nil, fmt.Errorf("%s: not a gpukit bundle manifest (kind %q, apiVersion %q)", filepath.Join(dir, ManifestFile), m.Kind, m.APIVersion)
	}
	return &m, nil
}

// Verify checks the bundle at dir against its manifest: every file listed
// there with its size and sha256, nothing beside them but the private key,
// and the manifest complete. It returns every problem found.
func Verify(dir string) ([]string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	if !m.Complete {
		problems = append(problems, fmt.Sprintf("the bundle is not complete: %d artifact(s) missing: %s", len(m.Missing), strings.Join(m.Missing, "; ")))
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Path] = true
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		st, err := os.Stat(p)
		if err != nil {
			problems = append(problems, f.Path+": "+err.Error())
			continue
		}
		if st.Size() != f.Size {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, the manifest says %d", f.Path, st.Size(), f.Size))
			continue
		}
		if got, err := FileSHA256(p); err != nil || got != f.SHA256 {
			problems = append(problems, fmt.Sprintf("%s: sha256 %s, the manifest says %s (%v)", f.Path, got, f.SHA256, err))
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == PrivateDir {
			return filepath.SkipDir
		}
		if !d.IsDir() && rel != ManifestFile && !listed[rel] {
			problems = append(problems, rel+": not in the manifest")
		}
		return nil
	})
	slices.Sort(problems)
	return problems, err
}

// FileSHA256 is the sha256 of the file at p, in hex.
func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/bundlehost"
	"github.com/gpukit/gpukit/pkg/debrepo"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Stats are what a run of Create did, by kind.
type Stats struct {
	Kind Kind
	// Files and Bytes are the bundle's; Fetched the artifacts this run
	// fetched (the others were there already).
	Files   int
	Bytes   int64
	Fetched int
	Took    time.Duration
}

// Options of Create.
type Options struct {
	// OSMirrors replace the bill's archive URLs of a family, in the order
	// the bill lists its archives (a site's mirrors of Debian's archive
	// and of its security archive).
	OSMirrors map[string][]string
	// Keyrings replace the bill's keyring file of a family, and
	// OSFingerprints the keys it pins: a site's mirror re-signed with the
	// site's own key.
	Keyrings       map[string]string
	OSFingerprints map[string][]string
	// Get fetches package repositories' indexes and keys, Stream their
	// packages (debrepo.HTTPGetter, HTTPStreamer: the defaults).
	Get    debrepo.Getter
	Stream debrepo.Streamer
	// Logf says what the run does, a line at a time.
	Logf func(format string, args ...any)
}

// creator is one run of Create.
type creator struct {
	inv  *inventory.Inventory
	dir  string
	list *List
	o    Options
	key  *openpgp.Entity
	// publicKey is key's, armored: what the hosts fetch and pin.
	publicKey []byte
	prev      map[string]bundlefs.File // the files the previous run's manifest lists
	missing   []string
	fetched   map[Kind]int
	took      map[Kind]time.Duration
}

// Create gathers list's artifacts into the bundle at dir, fetching only
// what it lacks, and writes its manifest last. It returns the manifest
// and the run's stats; an artifact it cannot have is named in the
// manifest's Missing (Complete false), and the error says how many.
func Create(ctx context.Context, inv *inventory.Inventory, list *List, dir string, o Options) (*bundlefs.Manifest, []Stats, error) {
	c := &creator{inv: inv, dir: dir, list: list, o: o, fetched: map[Kind]int{}, took: map[Kind]time.Duration{}}
	if c.o.Logf == nil {
		c.o.Logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(filepath.Join(dir, bundlefs.PrivateDir), 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(filepath.Join(dir, bundlefs.PrivateDir), 0o700); err != nil {
		return nil, nil, err
	}
	if m, err := bundlefs.ReadManifest(dir); err == nil {
		c.prev = map[string]bundlefs.File{}
		for _, f := range m.Files {
			c.prev[f.Path] = f
		}
	}
	if err := c.signingKey(); err != nil {
		return nil, nil, err
	}
	if err := bundlehost.EnsureCA(dir, list.Cluster); err != nil {
		return nil, nil, err
	}
	for _, a := range list.Unknown() {
		c.missing = append(c.missing, a.Name+": "+a.Unknown)
	}
	for _, step := range []struct {
		kind Kind
		run  func(context.Context) error
	}{{Package, c.packages}, {Chart, c.charts}, {Manifests, c.kubeflow}, {Image, c.images}} {
		began := time.Now()
		err := step.run(ctx)
		c.took[step.kind] += time.Since(began)
		if err != nil {
			return nil, nil, err
		}
	}
	m, stats, err := c.manifest()
	if err != nil {
		return nil, nil, err
	}
	if len(m.Missing) > 0 {
		return m, stats, fmt.Errorf("%d artifact(s) could not be had (bundle.json lists them; the bundle is not complete)", len(m.Missing))
	}
	return m, stats, nil
}

// signingKey reads the bundle's key, making one on the first run.
func (c *creator) signingKey() error {
	path := filepath.Join(c.dir, bundlefs.SecretKeyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		c.key, err = debrepo.ReadSigningKey(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if c.key, err = debrepo.NewSigningKey("gpukit bundle of " + c.list.Cluster); err != nil {
			return err
		}
		secret, err := debrepo.ArmoredPrivateKey(c.key)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(path, secret, 0o600); err != nil {
			return err
		}
	default:
		return err
	}
	if c.publicKey, err = debrepo.ArmoredPublicKey(c.key); err != nil {
		return err
	}
	return c.write(bundlefs.PublicKeyFile, c.publicKey)
}

// write puts b at rel in the bundle, whole.
func (c *creator) write(rel string, b []byte) error {
	p := filepath.Join(c.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, b, 0o644)
}

// have reports whether rel is in the bundle as the previous run's manifest
// recorded it (its size; its sum when want is ""), or with sum want.
func (c *creator) have(rel, want string) bool {
	p := filepath.Join(c.dir, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	if want == "" {
		f, ok := c.prev[rel]
		if !ok || f.Size != st.Size() {
			return false
		}
		want = f.SHA256
	}
	got, err := bundlefs.FileSHA256(p)
	return err == nil && got == want
}

func (c *creator) miss(format string, args ...any) {
	c.missing = append(c.missing, fmt.Sprintf(format, args...))
}

// manifest hashes every file of the bundle (the private key aside) and
// writes the manifest.
func (c *creator) manifest() (*bundlefs.Manifest, []Stats, error) {
	m := &bundlefs.Manifest{APIVersion: bundlefs.ManifestAPIVersion, Kind: bundlefs.ManifestKind, Cluster: c.list.Cluster, Fingerprint: debrepo.Fingerprint(c.key),
		Missing: c.missing, Complete: len(c.missing) == 0}
	arts, err := json.Marshal(c.list.Artifacts)
	if err != nil {
		return nil, nil, err
	}
	m.Artifacts = arts
	stats := map[Kind]*Stats{}
	for _, k := range kinds {
		stats[k] = &Stats{Kind: k, Fetched: c.fetched[k], Took: c.took[k]}
	}
	written := startOf(c) // read once: it is compared for every file
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == bundlefs.PrivateDir:
			return filepath.SkipDir
		case d.IsDir() || rel == bundlefs.ManifestFile || strings.HasPrefix(d.Name(), "."):
			return nil // a file being written, or a crashed run's leftover
		}
		f := bundlefs.File{Path: rel, Kind: string(kindOf(rel))}
		if prev, ok := c.prev[rel]; ok {
			if st, err := d.Info(); err == nil && st.Size() == prev.Size && st.ModTime().Before(written) {
				// unchanged since the last run wrote its manifest
				f.Size, f.SHA256 = prev.Size, prev.SHA256
			}
		}
		if f.SHA256 == "" {
			if f.SHA256, err = bundlefs.FileSHA256(p); err != nil {
				return err
			}
			st, err := d.Info()
			if err != nil {
				return err
			}
			f.Size = st.Size()
		}
		m.Files = append(m.Files, f)
		if s := stats[Kind(f.Kind)]; s != nil {
			s.Files++
			s.Bytes += f.Size
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	if err := c.write(bundlefs.ManifestFile, append(b, '\n')); err != nil {
		return nil, nil, err
	}
	var out []Stats
	for _, k := range kinds {
		out = append(out, *stats[k])
	}
	return m, out, nil
}

// startOf is when the previous manifest was written: files older than it
// are as it recorded them unless their size changed.
func startOf(c *creator) time.Time {
	st, err := os.Stat(filepath.Join(c.dir, bundlefs.ManifestFile))
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// kindOf is the kind of artifact a bundle file belongs to ("" the
// bundle's own: its key).
func kindOf(rel string) Kind {
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case bundlefs.PackagesDir:
		return Package
	case bundlefs.ChartsDir:
		return Chart
	case bundlefs.KubeflowDir:
		return Manifests
	case bundlefs.ImagesDir:
		return Image
	}
	return ""
}

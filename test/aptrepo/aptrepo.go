// Package aptrepo builds signed flat apt repositories for lab hosts, with
// dpkg-deb, dpkg-scanpackages and gpg. It is test tooling only: nothing here
// ships in the gpukit binary.
//
// A Tree (repositories, extra files, the key that signs them) is published
// under a directory named by its content hash: identical contents are built
// once and reused by every test and later run, and publishers that run at
// once never see each other's half-built trees.
package aptrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Repo is one repository of a Tree: flat, or laid out as Dist says.
type Repo struct {
	Debs    []Deb
	Release Release
	Dist    *Dist
}

// Tree is a set of repositories (by directory relative to the tree,
// ending in "/"), extra files (by relative path) and the key that signs
// every repository's Release.
type Tree struct {
	Repos map[string]Repo
	Files map[string][]byte
	Key   Key
}

// Hash names the tree by everything that goes into it, in 16 hex digits;
// not the Release files' Date, nor the build's file times.
func (t Tree) Hash() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "aptrepo tree 1\nkey %q\n", t.Key.Fingerprint)
	for _, sub := range slices.Sorted(maps.Keys(t.Repos)) {
		r := t.Repos[sub]
		rel := r.Release
		fmt.Fprintf(h, "repo %q\nrelease %q %q %q %q %q %q\n", sub, rel.Origin, rel.Label, rel.Suite, rel.Codename, rel.Description, rel.Archs)
		if r.Dist != nil {
			fmt.Fprintf(h, "dist %q %q\n", r.Dist.Codename, r.Dist.Component)
		}
		for _, d := range r.Debs {
			fmt.Fprintf(h, "deb %q %q %q\n", d.FileName(), d.Control(), d.Conffiles())
			for _, n := range slices.Sorted(maps.Keys(d.Scripts)) {
				fmt.Fprintf(h, "script %q %x\n", n, sha256.Sum256([]byte(d.Scripts[n])))
			}
			for _, f := range d.Files {
				sum, err := fileSum(f)
				if err != nil {
					return "", fmt.Errorf("aptrepo: package %s: %w", d.FileName(), err)
				}
				// Data and Src alike: the same bytes give the same hash
				fmt.Fprintf(h, "file %q %o %q %x\n", f.Path, f.Mode, f.Link, sum)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(t.Files)) {
		fmt.Fprintf(h, "extra %q %x\n", p, sha256.Sum256(t.Files[p]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// fileSum is the SHA-256 of f's bytes, streamed from Src.
func fileSum(f File) ([]byte, error) {
	h := sha256.New()
	if f.Src == "" {
		h.Write(f.Data)
		return h.Sum(nil), nil
	}
	in, err := os.Open(f.Src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if _, err := io.Copy(h, in); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// Publish builds the tree into root/<hash>/ unless it is there already
// (then it only touches its time, which keeps it from being pruned, and
// returns reused). It builds in root/.tmp-<hash>-* and renames that into
// place; when another publisher was first, its tree is reused. root is the
// trees' own directory: Publish prunes every other entry of it unused for a
// week, and half-built trees an hour old (a publisher that was killed).
func (t Tree) Publish(ctx context.Context, root string) (dir, hash string, reused bool, err error) {
	if hash, err = t.Hash(); err != nil {
		return "", "", false, err
	}
	dir = filepath.Join(root, hash)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", "", false, fmt.Errorf("aptrepo: %w", err)
	}
	prune(root, hash)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: prune keeps it
		return dir, hash, true, nil
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+hash+"-")
	if err != nil {
		return "", "", false, fmt.Errorf("aptrepo: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; removes a failed attempt
	if err := t.build(ctx, tmp); err != nil {
		return "", "", false, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() { // another publisher was first
			return dir, hash, true, nil
		}
		return "", "", false, fmt.Errorf("aptrepo: %w", err)
	}
	return dir, hash, false, nil
}

// build builds the tree into dir.
func (t Tree) build(ctx context.Context, dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil { // served as it is: MkdirTemp makes it 0700
		return fmt.Errorf("aptrepo: %w", err)
	}
	var releases []string
	for _, sub := range slices.Sorted(maps.Keys(t.Repos)) {
		if !filepath.IsLocal(sub) {
			return fmt.Errorf("aptrepo: repository directory %q is not inside the tree", sub)
		}
		d, r := filepath.Join(dir, sub), t.Repos[sub]
		var rel string
		var err error
		if r.Dist == nil {
			if err = Build(ctx, d, r.Debs); err == nil {
				rel, err = Index(ctx, d, r.Release)
			}
		} else if len(r.Release.Archs) == 1 {
			if err = Build(ctx, filepath.Join(d, r.Dist.pool(r.Release.Archs[0])), r.Debs); err == nil {
				rel, err = indexDist(ctx, d, *r.Dist, r.Release)
			}
		} else {
			err = fmt.Errorf("aptrepo: repository %s: a dists repository has one architecture, not %q", sub, r.Release.Archs)
		}
		if err != nil {
			return err
		}
		releases = append(releases, rel)
	}
	if len(releases) > 0 {
		if err := t.Key.Sign(ctx, releases...); err != nil {
			return err
		}
	}
	for p, data := range t.Files {
		if !filepath.IsLocal(p) || strings.HasSuffix(p, "/") {
			return fmt.Errorf("aptrepo: extra file %q is not a file inside the tree", p)
		}
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("aptrepo: %w", err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return fmt.Errorf("aptrepo: %w", err)
		}
	}
	return nil
}

// prune removes root's entries other than keep that are unused for a week,
// and half-built trees an hour old.
func prune(root, keep string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.Name() == keep {
			continue
		}
		age := time.Since(info.ModTime())
		if (strings.HasPrefix(e.Name(), ".tmp-") && age > time.Hour) || (!strings.HasPrefix(e.Name(), ".") && age > 7*24*time.Hour) {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// RequireTools skips t without the repository tools (dpkg-deb,
// dpkg-scanpackages, gpg, gpgv), unless GPUKIT_LAB=1 (CI) makes them
// mandatory.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("GPUKIT_LAB") == "1" {
				t.Fatalf("%s is required (GPUKIT_LAB=1): hack/install-deps.sh installs it", tool)
			}
			t.Skipf("%s is not installed (hack/install-deps.sh installs it)", tool)
		}
	}
}

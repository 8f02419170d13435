package aptrepo

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Release is what a flat repository's Release file says.
type Release struct {
	Origin, Label, Suite, Codename, Description string
	Archs                                       []string // e.g. amd64 ("all" is added)
}

// Index writes dir's Packages, Packages.gz and Release (SHA256 sums, Date)
// for the .debs in dir; it returns the Release file's path, for Key.Sign.
func Index(ctx context.Context, dir string, r Release) (string, error) {
	return index(ctx, dir, ".", ".", ".", "", r)
}

// Dist lays a repository out as Docker's are (download.docker.com/linux/
// debian): packages in dists/<Codename>/pool/<Component>/<arch>/, their index
// in dists/<Codename>/<Component>/binary-<arch>/, the Release in
// dists/<Codename>/; sources name it "deb URL <Codename> <Component>". One
// architecture: the Release's first.
type Dist struct{ Codename, Component string }

// pool is where d's packages go, relative to the repository.
func (d Dist) pool(arch string) string {
	return filepath.Join("dists", d.Codename, "pool", d.Component, arch)
}

// indexDist writes the indexes and Release of a Dist repository at dir.
func indexDist(ctx context.Context, dir string, d Dist, r Release) (string, error) {
	a := r.Archs[0] // one: Tree.build checked
	return index(ctx, dir, d.pool(a), filepath.Join("dists", d.Codename, d.Component, "binary-"+a),
		filepath.Join("dists", d.Codename), d.Component, r)
}

// index scans the .debs under scan (relative to root: the Filename fields
// are), writes Packages and Packages.gz into list, and the Release, naming
// them relative to it, into release.
func index(ctx context.Context, root, scan, list, release, components string, r Release) (string, error) {
	// --multiversion: a repository holds several versions of a package (a
	// pinned one and the upgrade apt must not take)
	c := exec.CommandContext(ctx, "dpkg-scanpackages", "--multiversion", scan, "/dev/null")
	c.Dir = root
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("aptrepo: dpkg-scanpackages in %s: %w: %s", root, err, strings.TrimSpace(errb.String()))
	}
	packages := out.Bytes()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := zw.Write(packages); err != nil {
		return "", fmt.Errorf("aptrepo: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("aptrepo: %w", err)
	}
	files := map[string][]byte{"Packages": packages, "Packages.gz": gz.Bytes()}
	archs := slices.DeleteFunc(slices.Clone(r.Archs), func(a string) bool { return a == "all" })
	var rel stanza
	field := rel.field
	field("Origin", r.Origin)
	field("Label", r.Label)
	field("Suite", r.Suite)
	field("Codename", r.Codename)
	field("Architectures", strings.Join(append(archs, "all"), " "))
	field("Components", components)
	field("Date", time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 UTC"))
	field("Description", r.Description)
	rel.WriteString("SHA256:\n")
	listDir := filepath.Join(root, list)
	if err := os.MkdirAll(listDir, 0o755); err != nil {
		return "", fmt.Errorf("aptrepo: %w", err)
	}
	prefix, err := filepath.Rel(release, list)
	if err != nil {
		return "", fmt.Errorf("aptrepo: %w", err)
	}
	for _, name := range []string{"Packages", "Packages.gz"} {
		fmt.Fprintf(&rel, " %x %d %s\n", sha256.Sum256(files[name]), len(files[name]), filepath.ToSlash(filepath.Join(prefix, name)))
		if err := os.WriteFile(filepath.Join(listDir, name), files[name], 0o644); err != nil {
			return "", fmt.Errorf("aptrepo: %w", err)
		}
	}
	p := filepath.Join(root, release, "Release")
	if err := os.WriteFile(p, []byte(rel.String()), 0o644); err != nil {
		return "", fmt.Errorf("aptrepo: %w", err)
	}
	return p, nil
}

package debrepo

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/gpukit/gpukit/pkg/atomicfile"
)

// WriteFlat makes dir a flat repository of pkgs signed by signer, which
// hosts use as `deb [signed-by=KEY] URL ./`: it writes Packages,
// Packages.gz, Release, Release.gpg (detached, armored) and InRelease
// (clearsigned), each replaced whole. The indexes go first and InRelease
// last, so that apt, reading InRelease first, finds indexes at least as
// new as what it hashes; a reader racing a rewrite can still see an old
// InRelease with new indexes, which apt refuses on the hash and retries.
//
// The .debs must be in dir already, each as its DebName (Download puts
// them there): WriteFlat hashes each and refuses one missing or unlike its
// index entry, so the repository never lists a file it does not describe.
// Other files in dir are left alone. Each package's stanza is the one its
// index had, every field kept but where the file is and its sums.
func WriteFlat(dir string, pkgs []*Package, signer *openpgp.Entity, origin string) error {
	return write(dir, "", "", "", pkgs, signer, origin)
}

// WriteDists makes dir a repository laid out as the big ones are, which
// hosts use as `deb [signed-by=KEY] URL SUITE COMPONENT` (Docker's
// repository is one, and its mirror must be one too): the .debs in
// pool/COMPONENT/ (Download puts them there), the indexes in
// dists/SUITE/COMPONENT/binary-ARCH/, the signed Release files in
// dists/SUITE/. One suite, one component and one architecture a call, as
// WriteFlat otherwise.
func WriteDists(dir, suite, component, arch string, pkgs []*Package, signer *openpgp.Entity, origin string) error {
	for _, v := range []string{suite, component, arch} {
		if v == "" || strings.ContainsAny(v, "/\\ \t\r\n") || v == "." || v == ".." {
			return fmt.Errorf("write repository: suite, component and architecture %q %q %q: each one path element", suite, component, arch)
		}
	}
	return write(dir, suite, component, arch, pkgs, signer, origin)
}

// PoolDir is where WriteDists wants the .debs of component.
func PoolDir(dir, component string) string { return filepath.Join(dir, "pool", component) }

// write is WriteFlat (suite "") or WriteDists.
func write(dir, suite, component, arch string, pkgs []*Package, signer *openpgp.Entity, origin string) error {
	if signer == nil || signer.PrivateKey == nil || signer.PrivateKey.Encrypted {
		return errors.New("write repository: the signing key has no usable private key")
	}
	if strings.TrimSpace(origin) == "" || strings.ContainsAny(origin, "\r\n") {
		return fmt.Errorf("write repository: origin %q: not one line", origin)
	}
	debs, prefix, indexes, releases := dir, "./", dir, dir
	if suite != "" {
		debs, prefix = PoolDir(dir, component), "pool/"+component+"/"
		releases = filepath.Join(dir, "dists", suite)
		indexes = filepath.Join(releases, component, "binary-"+arch)
	}
	var packages bytes.Buffer
	files := map[string]*Package{}
	var archs []string
	for _, p := range sorted(pkgs) {
		name := p.DebName()
		if q := files[name]; q != nil {
			return fmt.Errorf("%s and %s: both are %s", q, p, name)
		}
		files[name] = p
		path := filepath.Join(debs, name)
		got, err := sumFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if got != (fileSum{p.SHA256, p.Size}) {
			return fmt.Errorf("%s: %s is %d bytes of SHA256 %s, the index says %d bytes of SHA256 %s", p, path, got.size, got.sha256, p.Size, p.SHA256)
		}
		if packages.Len() > 0 {
			packages.WriteByte('\n')
		}
		packages.WriteString(stanza(p, prefix+name))
		if p.Architecture != "all" && !slices.Contains(archs, p.Architecture) {
			archs = append(archs, p.Architecture)
		}
	}
	slices.Sort(archs)
	if suite != "" {
		archs = []string{arch}
	}
	if len(archs) == 0 {
		archs = []string{"all"}
	}
	if unchanged(indexes, releases, packages.Bytes(), signer) {
		return nil
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level: no error
	zw.Write(packages.Bytes())
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write repository: %w", err)
	}
	var release bytes.Buffer
	fmt.Fprintf(&release, "Origin: %s\nLabel: %s\n", origin, origin)
	at := "" // the indexes' paths in Release, relative to it
	if suite != "" {
		fmt.Fprintf(&release, "Suite: %s\nCodename: %s\nComponents: %s\n", suite, suite, component)
		at = component + "/binary-" + arch + "/"
	}
	fmt.Fprintf(&release, "Date: %s\nArchitectures: %s\nSHA256:\n", time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 UTC"), strings.Join(archs, " "))
	for _, f := range []struct {
		name string
		b    []byte
	}{{"Packages", packages.Bytes()}, {"Packages.gz", gz.Bytes()}} {
		fmt.Fprintf(&release, " %x %d %s\n", sha256.Sum256(f.b), len(f.b), at+f.name)
	}
	inRelease, detached, err := sign(release.Bytes(), signer)
	if err != nil {
		return fmt.Errorf("write repository: %w", err)
	}
	if err := os.MkdirAll(indexes, 0o755); err != nil {
		return fmt.Errorf("write repository: %w", err)
	}
	for _, f := range []struct {
		dir, name string
		b         []byte
	}{{indexes, "Packages", packages.Bytes()}, {indexes, "Packages.gz", gz.Bytes()}, {releases, "Release", release.Bytes()},
		{releases, "Release.gpg", detached}, {releases, "InRelease", inRelease}} {
		if err := atomicfile.Write(filepath.Join(f.dir, f.name), f.b, 0o644); err != nil {
			return fmt.Errorf("write repository: %w", err)
		}
	}
	return nil
}

// unchanged reports whether the repository already lists exactly packages
// in a Release file signer signed: it is left as it is, so that writing the
// same repository again changes no file (a bundle's second run).
func unchanged(indexes, releases string, packages []byte, signer *openpgp.Entity) bool {
	have, err := os.ReadFile(filepath.Join(indexes, "Packages"))
	if err != nil || !bytes.Equal(have, packages) {
		return false
	}
	in, err := os.ReadFile(filepath.Join(releases, "InRelease"))
	if err != nil {
		return false
	}
	block, _ := clearsign.Decode(in)
	if block == nil {
		return false
	}
	sum := fmt.Sprintf(" %x %d ", sha256.Sum256(packages), len(packages))
	if !bytes.Contains(block.Plaintext, []byte(sum)) {
		return false
	}
	_, err = block.VerifySignature(openpgp.EntityList{signer}, nil)
	return err == nil
}

// sign makes InRelease and Release.gpg of a Release file.
func sign(release []byte, signer *openpgp.Entity) (inRelease, detached []byte, err error) {
	var in bytes.Buffer
	w, err := clearsign.Encode(&in, signer.PrivateKey, signConfig)
	if err != nil {
		return nil, nil, err
	}
	if _, err := w.Write(release); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	in.WriteByte('\n')
	var det bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&det, signer, bytes.NewReader(release), signConfig); err != nil {
		return nil, nil, err
	}
	det.WriteByte('\n')
	return in.Bytes(), det.Bytes(), nil
}

// dropped are the fields of a stanza that describe the file where the
// source index had it; WriteFlat writes its own.
var dropped = map[string]bool{"filename": true, "size": true, "md5sum": true, "sha1": true, "sha256": true, "sha512": true}

// stanza is p's paragraph in the bundle's index, its file at filename
// (relative to the repository's root), ending in a newline.
func stanza(p *Package, filename string) string {
	raw := p.stanza
	if raw == "" {
		raw = synthesize(p)
	}
	var b strings.Builder
	skip := false
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			if colon := strings.IndexByte(line, ':'); colon > 0 {
				skip = dropped[strings.ToLower(line[:colon])]
			}
		}
		if !skip {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "Filename: %s\nSize: %d\nSHA256: %s\n", filename, p.Size, p.SHA256)
	return b.String()
}

// synthesize writes the fields of a Package made by hand rather than read
// from an index.
func synthesize(p *Package) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: %s\n", p.Name, p.Version, p.Architecture)
	if p.MultiArch != "" {
		fmt.Fprintf(&b, "Multi-Arch: %s\n", p.MultiArch)
	}
	if p.Essential {
		b.WriteString("Essential: yes\n")
	}
	if p.Priority != "" {
		fmt.Fprintf(&b, "Priority: %s\n", p.Priority)
	}
	if len(p.PreDepends.Relations) > 0 {
		fmt.Fprintf(&b, "Pre-Depends: %s\n", p.PreDepends)
	}
	if len(p.Depends.Relations) > 0 {
		fmt.Fprintf(&b, "Depends: %s\n", p.Depends)
	}
	var provides []string
	for _, pr := range p.Provides {
		if pr.Version != nil {
			provides = append(provides, fmt.Sprintf("%s (= %s)", pr.Name, pr.Version))
		} else {
			provides = append(provides, pr.Name)
		}
	}
	if len(provides) > 0 {
		fmt.Fprintf(&b, "Provides: %s\n", strings.Join(provides, ", "))
	}
	return b.String()
}

// sumFile is path's size and SHA256.
func sumFile(path string) (fileSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileSum{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileSum{}, err
	}
	return fileSum{hex.EncodeToString(h.Sum(nil)), n}, nil
}

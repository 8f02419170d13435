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
	if signer == nil || signer.PrivateKey == nil || signer.PrivateKey.Encrypted {
		return errors.New("write repository: the signing key has no usable private key")
	}
	if strings.TrimSpace(origin) == "" || strings.ContainsAny(origin, "\r\n") {
		return fmt.Errorf("write repository: origin %q: not one line", origin)
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
		path := filepath.Join(dir, name)
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
		packages.WriteString(stanza(p))
		if p.Architecture != "all" && !slices.Contains(archs, p.Architecture) {
			archs = append(archs, p.Architecture)
		}
	}
	slices.Sort(archs)
	if len(archs) == 0 {
		archs = []string{"all"}
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level: no error
	zw.Write(packages.Bytes())
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write repository: %w", err)
	}
	var release bytes.Buffer
	fmt.Fprintf(&release, "Origin: %s\nLabel: %s\nDate: %s\nArchitectures: %s\nSHA256:\n", origin, origin,
		time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 UTC"), strings.Join(archs, " "))
	for _, f := range []struct {
		name string
		b    []byte
	}{{"Packages", packages.Bytes()}, {"Packages.gz", gz.Bytes()}} {
		fmt.Fprintf(&release, " %x %d %s\n", sha256.Sum256(f.b), len(f.b), f.name)
	}
	inRelease, detached, err := sign(release.Bytes(), signer)
	if err != nil {
		return fmt.Errorf("write repository: %w", err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"Packages", packages.Bytes()}, {"Packages.gz", gz.Bytes()}, {"Release", release.Bytes()}, {"Release.gpg", detached}, {"InRelease", inRelease}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.b, 0o644); err != nil {
			return fmt.Errorf("write repository: %w", err)
		}
	}
	return nil
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

// stanza is p's paragraph in the bundle's index, ending in a newline.
func stanza(p *Package) string {
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
	fmt.Fprintf(&b, "Filename: ./%s\nSize: %d\nSHA256: %s\n", p.DebName(), p.Size, p.SHA256)
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

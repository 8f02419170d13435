package debrepo

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/ulikunitz/xz"
)

// Source is one apt repository, as a sources.list line names it: `deb
// [arch=Arch signed-by=Keyring] URL Suite Components...`.
type Source struct {
	URL string
	// Suite "" or "/", or a path ending in "/" ("./", "x86_64/"), names a
	// flat repository: its InRelease and Packages are at URL (or
	// URL/Suite) itself, as NVIDIA's CUDA repositories lay them out.
	// Otherwise they are under URL/dists/Suite, one Packages per component.
	Suite      string
	Components []string
	Arch       string
	// Keyring holds the OpenPGP public keys, armored or binary.
	Keyring []byte
	// Fingerprints pins the primary keys whose signature Read accepts
	// (40 hex digits, any case, spaces ignored).
	Fingerprints []string
}

// Index is a repository's verified Packages index (every component's).
type Index struct {
	URL string
	// Signer is the primary fingerprint of the key whose signature of the
	// Release file Read verified.
	Signer   string
	Packages []*Package
}

const (
	maxRelease = 32 << 20 // Ubuntu's InRelease is about 300 kB
	// maxPackages bounds an uncompressed index the Release file does not
	// size (Debian's main is about 50 MB).
	maxPackages = 1 << 30
)

// layout is the URL of the directory s's Release file is in, and whether
// s is a flat repository.
func (s Source) layout() (dir string, flat bool) {
	base := strings.TrimRight(s.URL, "/")
	switch suite := strings.Trim(s.Suite, "/"); {
	case s.Suite == "" || s.Suite == "/" || suite == ".":
		return base, true
	case strings.HasSuffix(s.Suite, "/"):
		return base + "/" + strings.TrimPrefix(suite, "./"), true
	default:
		return base + "/dists/" + s.Suite, false
	}
}

// Read fetches src's Release file through get, verifies it, and fetches,
// checks and parses the Packages index of each component for src.Arch.
// Errors name the URL they concern.
func Read(ctx context.Context, get Getter, src Source) (*Index, error) {
	u, err := url.Parse(src.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("source %q: not a URL", src.URL)
	}
	dir, flat := src.layout()
	switch {
	case src.Arch == "" || src.Arch == "all":
		return nil, fmt.Errorf("%s: architecture %q: not a host architecture", dir, src.Arch)
	case flat && len(src.Components) > 0:
		return nil, fmt.Errorf("%s: a flat repository has no components", dir)
	case !flat && len(src.Components) == 0:
		return nil, fmt.Errorf("%s: no component", dir)
	}
	v, err := newVerifier(src.Keyring, src.Fingerprints)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	rel, err := fetchRelease(ctx, get, dir, v)
	if err != nil {
		return nil, err
	}
	type target struct {
		prefix   string // the index's path relative to dir, less "Packages"
		optional bool
	}
	var targets []target
	if flat {
		targets = []target{{"", false}}
	} else {
		if archs := rel.words("architectures"); len(archs) > 0 && !slices.Contains(archs, src.Arch) {
			return nil, fmt.Errorf("%s/Release: no architecture %s (only %s)", dir, src.Arch, strings.Join(archs, " "))
		}
		comps := rel.words("components")
		for _, c := range src.Components {
			// Debian's security archive names its components updates/main
			// ... and indexes them as main/...: apt takes "main" for it.
			if len(comps) > 0 && !slices.Contains(comps, c) && !slices.Contains(comps, "updates/"+c) {
				return nil, fmt.Errorf("%s/Release: no component %s (only %s)", dir, c, strings.Join(comps, " "))
			}
			targets = append(targets, target{c + "/binary-" + src.Arch + "/", false})
			// Architecture all packages are in each architecture's index
			// unless the repository says it keeps them apart, as apt reads
			// it; a component may still have none.
			if slices.Contains(rel.words("architectures"), "all") && rel.fields["no-support-for-architecture-all"] != "Packages" {
				targets = append(targets, target{c + "/binary-all/", true})
			}
		}
	}
	idx := &Index{URL: strings.TrimRight(src.URL, "/"), Signer: rel.signer}
	for _, t := range targets {
		if t.optional && !rel.lists(t.prefix+"Packages") {
			continue
		}
		text, where, err := fetchPackages(ctx, get, dir, t.prefix, rel)
		if err != nil {
			return nil, err
		}
		pkgs, err := ParsePackages(idx.URL, text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		idx.Packages = append(idx.Packages, pkgs...)
	}
	return idx, nil
}

// fetchRelease fetches and verifies dir's InRelease, or its Release and
// Release.gpg when there is no InRelease. An InRelease that fails its
// check is not a reason to try Release: that would let whoever can break
// one file choose the other.
func fetchRelease(ctx context.Context, get Getter, dir string, v *verifier) (*release, error) {
	in := dir + "/InRelease"
	data, inErr := get(ctx, in, maxRelease)
	if inErr == nil {
		signed, text, sig, err := clearsigned(data)
		if err == nil {
			var fp string
			if fp, err = v.check(signed, func() io.Reader { return bytes.NewReader(sig) }); err == nil {
				var rel *release
				if rel, err = parseRelease(text, fp); err == nil {
					return rel, nil
				}
			}
		}
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	relURL, sigURL := dir+"/Release", dir+"/Release.gpg"
	text, err := get(ctx, relURL, maxRelease)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", in, inErr), fmt.Errorf("%s: %w", relURL, err))
	}
	armored, err := get(ctx, sigURL, maxRelease)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sigURL, err)
	}
	sig, err := dearmor(armored)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sigURL, err)
	}
	fp, err := v.check(text, func() io.Reader { return bytes.NewReader(sig) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", relURL, err)
	}
	rel, err := parseRelease(text, fp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", relURL, err)
	}
	return rel, nil
}

// fetchPackages fetches the Packages index at dir/prefix that the Release
// file lists, .xz before .gz before plain (the smallest first), checks it
// against the Release file's SHA256 and size, and decompresses it, also
// checked when the Release file hashes the plain index too. A variant that
// fails to arrive gives way to the next (Debian lists a plain Packages it
// does not serve); one that arrives wrong is refused.
func fetchPackages(ctx context.Context, get Getter, dir, prefix string, rel *release) ([]byte, string, error) {
	plain, hasPlain := rel.sha256[prefix+"Packages"]
	var errs []error
	for _, ext := range []string{".xz", ".gz", ""} {
		sum, ok := rel.sha256[prefix+"Packages"+ext]
		if !ok {
			continue
		}
		where := dir + "/" + prefix + "Packages" + ext
		b, err := get(ctx, where, max(sum.size, 1))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if err := checkSum(b, sum); err != nil {
			return nil, "", fmt.Errorf("%s: %w", where, err)
		}
		limit := int64(maxPackages)
		if hasPlain {
			limit = plain.size
		}
		text, err := decompress(ext, b, limit)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", where, err)
		}
		if hasPlain && ext != "" {
			if err := checkSum(text, plain); err != nil {
				return nil, "", fmt.Errorf("%s: uncompressed: %w", where, err)
			}
		}
		return text, where, nil
	}
	if len(errs) == 0 {
		return nil, "", fmt.Errorf("%s/Release: no Packages index for %s", dir, strings.TrimSuffix(prefix, "/"))
	}
	return nil, "", errors.Join(errs...)
}

// checkSum compares b with what the Release file says of it.
func checkSum(b []byte, want fileSum) error {
	got := sha256.Sum256(b)
	if int64(len(b)) != want.size || hex.EncodeToString(got[:]) != want.sha256 {
		return fmt.Errorf("%d bytes of SHA256 %x, the Release file says %d bytes of SHA256 %s", len(b), got, want.size, want.sha256)
	}
	return nil
}

// decompress undoes ext's compression, failing past limit bytes.
func decompress(ext string, b []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch ext {
	case "":
		return b, nil
	case ".gz":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = zr
	case ".xz":
		xr, err := xz.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = xr
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("more than %d bytes uncompressed", limit)
	}
	return out, nil
}

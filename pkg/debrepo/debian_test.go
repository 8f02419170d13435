package debrepo

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// debian12Keys pins Debian 12's archive keys, from `gpg --show-keys
// /usr/share/keyrings/debian-archive-keyring.gpg` (debian-archive-keyring
// 2023.3+deb12u2) and the signatures of bookworm's InRelease (`gpgv
// --keyring ... InRelease`): the archive's automatic signing key
// (12/bookworm), whose subkey 4CB50190207B4758A3F73A796ED0E7B82643E131
// signs, and the stable release key (12/bookworm).
var debian12Keys = []string{
	"B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8", // Debian Archive Automatic Signing Key (12/bookworm)
	"4D64FEC119C2029067D6E791F8D2585B8783D481", // Debian Stable Release Key (12/bookworm)
}

// TestDebianBookworm reads Debian 12's main archive for amd64, verified,
// and resolves what an NVIDIA driver's DKMS build needs. It needs the
// network: it fails when the mirror is unreachable, unless
// GPUKIT_DEBREPO_NET=0 says there is none.
func TestDebianBookworm(t *testing.T) {
	if os.Getenv("GPUKIT_DEBREPO_NET") == "0" {
		t.Skip("GPUKIT_DEBREPO_NET=0: no network for Debian's mirror")
	}
	mirror := os.Getenv("GPUKIT_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	keyring, err := os.ReadFile("/usr/share/keyrings/debian-archive-keyring.gpg")
	if err != nil {
		t.Fatalf("Debian's keyring (package debian-archive-keyring): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var fetched int64
	get := HTTPGetter(&http.Client{Timeout: 3 * time.Minute})
	counting := func(ctx context.Context, url string, max int64) ([]byte, error) {
		b, err := get(ctx, url, max)
		fetched += int64(len(b))
		return b, err
	}
	idx, err := Read(ctx, counting, Source{URL: mirror, Suite: "bookworm", Components: []string{"main"}, Arch: "amd64",
		Keyring: keyring, Fingerprints: debian12Keys})
	if err != nil {
		t.Fatalf("%v (GPUKIT_DEBREPO_NET=0 skips this test where there is no network)", err)
	}
	read := time.Since(start)
	start = time.Now()
	pkgs, err := Resolve([]*Index{idx}, "amd64", []Want{{Name: "dkms"}, {Name: "build-essential"}, {Name: "linux-headers-amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	resolved := time.Since(start)
	if err := Check(pkgs, "amd64"); err != nil {
		t.Errorf("the closure is not closed:\n%v", err)
	}
	names := map[string]bool{}
	var size int64
	for _, p := range pkgs {
		names[p.Name] = true
		size += p.Size
	}
	for _, n := range []string{"dkms", "build-essential", "linux-headers-amd64", "gcc-12", "make", "libc6-dev", "dpkg-dev", "libc6", "bash", "dpkg"} {
		if !names[n] {
			t.Errorf("the closure lacks %s", n)
		}
	}
	t.Logf("signed by %s; %d packages in the index, %d bytes fetched in %v; closure of %d packages, %.1f MB, resolved in %v",
		idx.Signer, len(idx.Packages), fetched, read.Round(time.Millisecond), len(pkgs), float64(size)/1e6, resolved.Round(time.Millisecond))

	// The security archive, as a host's sources name it (bookworm-security
	// main), though its Release lists updates/main: signed by the security
	// archive's own key (12/bookworm).
	security := strings.TrimSuffix(mirror, "/debian") + "/debian-security"
	sec, err := Read(ctx, get, Source{URL: security, Suite: "bookworm-security", Components: []string{"main"}, Arch: "amd64",
		Keyring: keyring, Fingerprints: []string{"05AB90340C0C5E797F44A8C8254CF3B5AEC0A8F0"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Packages) == 0 {
		t.Errorf("%s bookworm-security main: no packages", security)
	}
}

package gpusim

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/lab"
)

// Repo is the simulator's stand-in of NVIDIA's package repositories, laid out
// as gpukit expects a mirror of them (spec.mirrors.nvidia = URL):
//
//	URL/cuda/repos/debian12/x86_64/        flat, signed apt repository + cuda-keyring_1.1-1_all.deb
//	URL/libnvidia-container/gpgkey         the signing key, ASCII-armored
//	URL/libnvidia-container/stable/deb/amd64/  flat, signed apt repository
//
// (sbsa / arm64 on an arm64 machine). It lives in the lab repository's web
// root under gpusim/<content hash>/: identical contents are published once
// and reused by every test and later run.
type Repo struct {
	// URL is the base URL for lab hosts, ending in "/": the value of
	// spec.mirrors.nvidia.
	URL string
	// CUDA is the CUDA repository's URL (URL + cuda/repos/debian12/x86_64/).
	CUDA string
	// ContainerToolkit is the container toolkit repositories' base (URL +
	// libnvidia-container/).
	ContainerToolkit string
	// Dir is URL's directory on this machine.
	Dir string
	// KeyFingerprint is the test signing key's fingerprint.
	KeyFingerprint string
	// Reused is true when an identical repository was already published.
	Reused bool
}

// repoPort is the lab repository's port (test/lab: http://BRIDGE:8080/).
const repoPort = "8080"

// LabDir is the directory of the lab l belongs to ($GPUKIT_LAB_DIR): l.Dir
// is LabDir/run/ID.
func LabDir(l *lab.Lab) string { return filepath.Dir(filepath.Dir(l.Dir)) }

// PublishForLab publishes the stand-in repositories for l's hosts, checks
// that the lab repository serves them, and returns them; it fails the test
// on error.
func PublishForLab(t testing.TB, l *lab.Lab) Repo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	r, err := Publish(ctx, LabDir(l), l.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	how := "built"
	if r.Reused {
		how = "reused"
	}
	t.Logf("GPU SIMULATOR repositories %s in %s: %s", how, time.Since(began).Round(time.Millisecond), r.URL)
	if err := r.check(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// check fetches the signed index of each repository from the lab repository.
func (r Repo) check(ctx context.Context) error {
	for _, u := range []string{r.CUDA + "InRelease", r.ContainerToolkit + "gpgkey"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return fmt.Errorf("gpusim: the lab repository does not serve %s: %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("gpusim: the lab repository answers %s for %s", resp.Status, u)
		}
	}
	return nil
}

// Publish builds the stand-in repositories into labDir's repository web root
// (labDir/repo/www/gpusim/<hash>/), unless identical ones are there already,
// and returns them with URLs on the lab bridge's address. It builds the
// stand-in binaries (go build, once per process), makes the test signing key once
// (labDir/repo/gpusim-key, outside the web root), builds the packages with
// dpkg-deb, indexes them with dpkg-scanpackages and signs the indexes with
// gpg. Concurrent publishers do not disturb each other: each builds in a
// directory of its own and renames it into place.
func Publish(ctx context.Context, labDir, bridge string) (Repo, error) {
	a, err := archFor(runtime.GOARCH)
	if err != nil {
		return Repo{}, err
	}
	for _, tool := range []string{"dpkg-deb", "dpkg-scanpackages", "gpg", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Repo{}, fmt.Errorf("gpusim: %s is not installed (hack/install-deps.sh installs dpkg-dev and gnupg): %w", tool, err)
		}
	}
	key, err := loadKey(ctx, filepath.Join(labDir, "repo", "gpusim-key"))
	if err != nil {
		return Repo{}, err
	}
	bin, err := standInBinaries(ctx)
	if err != nil {
		return Repo{}, err
	}
	const nvidiaCUDA = "https://developer.download.nvidia.com/compute/cuda/repos/"
	cudaDir := "cuda/repos/debian12/" + a.CUDA + "/"
	toolkitDir := "libnvidia-container/stable/deb/" + a.Deb + "/"
	repos := map[string][]deb{
		cudaDir:    cudaPackages(a, bin, key.Binary, nvidiaCUDA+"debian12/"+a.CUDA+"/"),
		toolkitDir: toolkitPackages(a, bin),
	}
	hash := contentHash(key, repos)
	root := filepath.Join(labDir, "repo", "www", "gpusim")
	dir := filepath.Join(root, hash)
	base := "http://" + bridge + ":" + repoPort + "/gpusim/" + hash + "/"
	r := Repo{URL: base, CUDA: base + cudaDir, ContainerToolkit: base + "libnvidia-container/", Dir: dir, KeyFingerprint: key.Fingerprint}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return r, err
	}
	prune(root, hash)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: prune keeps it
		r.Reused = true
		return r, nil
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+hash+"-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp) // gone after the rename; removes a failed attempt
	if err := os.Chmod(tmp, 0o755); err != nil {
		return r, err
	}
	var releases []string
	for sub, debs := range repos {
		d := filepath.Join(tmp, sub)
		if err := buildDebs(ctx, d, debs); err != nil {
			return r, err
		}
		origin, label := Label, "NVIDIA CUDA" // the label cuda-keyring's pin names
		if sub == toolkitDir {
			label = "libnvidia-container"
		}
		rel, err := indexRepo(ctx, d, origin, label, a.Deb)
		if err != nil {
			return r, err
		}
		releases = append(releases, rel)
	}
	if err := key.signRelease(ctx, releases...); err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "libnvidia-container", "gpgkey"), key.Armored, 0o644); err != nil {
		return r, err
	}
	readme := "This is the " + Label + " (gpukit's test/gpusim), test only: stand-ins of NVIDIA's\n" +
		"package repositories with NVIDIA's package names and versions, signed with a TEST key\n" +
		"(" + key.Fingerprint + "). Nothing here is NVIDIA software.\n"
	if err := os.WriteFile(filepath.Join(tmp, "README"), []byte(readme), 0o644); err != nil {
		return r, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() { // another publisher was first
			r.Reused = true
			return r, nil
		}
		return r, err
	}
	return r, nil
}

// standIns holds the Go stand-ins once built: every Publish of this process
// (and BuildNvidiaSMI) takes the same binaries instead of running go build
// again. A failed build is not kept: the next caller tries again.
var standIns struct {
	mu  sync.Mutex
	bin *binaries
}

// standInBinaries builds the Go stand-ins (static, for the lab hosts), once
// per process.
func standInBinaries(ctx context.Context) (binaries, error) {
	standIns.mu.Lock()
	defer standIns.mu.Unlock()
	if standIns.bin != nil {
		return *standIns.bin, nil
	}
	bin, err := buildBinaries(ctx, runtime.GOARCH)
	if err != nil {
		return binaries{}, err
	}
	standIns.bin = &bin
	return bin, nil
}

// buildBinaries builds the Go stand-ins (static, for the lab hosts).
func buildBinaries(ctx context.Context, goarch string) (binaries, error) {
	out, err := os.MkdirTemp("", "gpusim-bin")
	if err != nil {
		return binaries{}, err
	}
	defer os.RemoveAll(out)
	const pkg = "github.com/gpukit/gpukit/test/gpusim/cmd/"
	// -trimpath and no VCS stamp: the same sources give the same bytes, so the
	// repository's content hash only changes with the stand-ins themselves.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out+"/",
		pkg+"nvidia-smi", pkg+"nvidia-persistenced", pkg+"nvidia-ctk", pkg+"nvidia-container-runtime")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return binaries{}, fmt.Errorf("gpusim: building the stand-in binaries: %w\n%s", err, b)
	}
	var bin binaries
	for name, dst := range map[string]*[]byte{"nvidia-smi": &bin.NvidiaSMI, "nvidia-persistenced": &bin.Persistenced, "nvidia-ctk": &bin.CTK,
		"nvidia-container-runtime": &bin.ContainerRuntime} {
		if *dst, err = os.ReadFile(filepath.Join(out, name)); err != nil {
			return binaries{}, err
		}
	}
	return bin, nil
}

// contentHash names a repository by everything that goes into it.
func contentHash(key testKey, repos map[string][]deb) string {
	h := sha256.New()
	fmt.Fprintf(h, "gpusim repository layout 1\nkey %s\n", key.Fingerprint)
	subs := make([]string, 0, len(repos))
	for s := range repos {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	for _, s := range subs {
		fmt.Fprintf(h, "repo %s\n", s)
		for _, d := range repos[s] {
			fmt.Fprintf(h, "deb %s\n%s\n%s\n", d.FileName(), d.control(), d.conffiles())
			names := make([]string, 0, len(d.Scripts))
			for n := range d.Scripts {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(h, "script %s %x\n", n, sha256.Sum256([]byte(d.Scripts[n])))
			}
			for _, f := range d.Files {
				fmt.Fprintf(h, "file %s %o %q %x\n", f.Path, f.Mode, f.Link, sha256.Sum256(f.Data))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// prune removes repositories of other contents unused for a week, and
// half-built ones an hour old (a publisher that was killed).
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

// buildDebs builds debs into dir with dpkg-deb, a few at a time.
func buildDebs(ctx context.Context, dir string, debs []deb) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpusim-deb")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, max(runtime.NumCPU(), 2))
	)
	for i, d := range debs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := buildDeb(ctx, filepath.Join(work, fmt.Sprint(i)), filepath.Join(dir, d.FileName()), d); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("gpusim: package %s: %w", d.FileName(), err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func buildDeb(ctx context.Context, tree, out string, d deb) error {
	write := func(path string, mode os.FileMode, data []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, mode); err != nil {
			return err
		}
		return os.Chmod(path, mode) // whatever the umask
	}
	if err := write(filepath.Join(tree, "DEBIAN", "control"), 0o644, []byte(d.control())); err != nil {
		return err
	}
	if c := d.conffiles(); c != "" {
		if err := write(filepath.Join(tree, "DEBIAN", "conffiles"), 0o644, []byte(c)); err != nil {
			return err
		}
	}
	for name, body := range d.Scripts {
		if err := write(filepath.Join(tree, "DEBIAN", name), 0o755, []byte(body)); err != nil {
			return err
		}
	}
	for _, f := range d.Files {
		p := filepath.Join(tree, f.Path)
		if f.Link != "" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(f.Link, p); err != nil {
				return err
			}
			continue
		}
		if err := write(p, f.Mode, f.Data); err != nil {
			return err
		}
	}
	// directories made by MkdirAll under a restrictive umask: dpkg-deb keeps their modes
	if err := filepath.WalkDir(tree, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		return err
	}
	c := exec.CommandContext(ctx, "dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", tree, out)
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb: %w\n%s", err, b)
	}
	return nil
}

// indexRepo writes a flat repository's Packages, Packages.gz and Release;
// it returns the Release file's path.
func indexRepo(ctx context.Context, dir, origin, label, debArch string) (string, error) {
	c := exec.CommandContext(ctx, "dpkg-scanpackages", "--multiversion", ".", "/dev/null")
	c.Dir = dir
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("gpusim: dpkg-scanpackages in %s: %w: %s", dir, err, errb.String())
	}
	packages := out.Bytes()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := io.Copy(zw, bytes.NewReader(packages)); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	files := map[string][]byte{"Packages": packages, "Packages.gz": gz.Bytes()}
	var rel strings.Builder
	fmt.Fprintf(&rel, "Origin: %s\nLabel: %s\nArchitectures: %s all\n", origin, label, debArch)
	fmt.Fprintf(&rel, "Date: %s\n", time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05 UTC"))
	fmt.Fprintf(&rel, "Description: %s stand-in repository (test only; not NVIDIA's)\nSHA256:\n", Label)
	for _, name := range []string{"Packages", "Packages.gz"} {
		fmt.Fprintf(&rel, " %x %d %s\n", sha256.Sum256(files[name]), len(files[name]), name)
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return "", err
		}
	}
	p := filepath.Join(dir, "Release")
	return p, os.WriteFile(p, []byte(rel.String()), 0o644)
}

package gpusim

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/aptrepo"
	"github.com/gpukit/gpukit/test/fixtures"
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

// cudaKeyFile is the name of the key in NVIDIA's CUDA repositories for apt.
const cudaKeyFile = "3bf863cc.pub"

// repoPort is the lab repository's port (test/lab: http://BRIDGE:8080/).
const repoPort = "8080"

// keyUID names the TEST key that signs the stand-in repositories, made once
// per lab directory: apt on the lab hosts checks the signatures as it checks
// NVIDIA's, against the keyring cuda-keyring installs (and the container
// toolkit's gpgkey).
const keyUID = "gpukit GPU SIMULATOR test repository key (NOT NVIDIA; test only) <gpusim@gpukit.invalid>"

// PublishForLab publishes the stand-in repositories for l's hosts, checks
// that the lab repository serves them, and returns them; it fails the test
// on error.
func PublishForLab(t testing.TB, l *lab.Lab) Repo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	r, err := Publish(ctx, l.LabDir(), l.Bridge)
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
// gpg (package aptrepo). Concurrent publishers do not disturb each other:
// each builds in a directory of its own and renames it into place.
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
	key, err := aptrepo.LoadKey(ctx, filepath.Join(labDir, "repo", "gpusim-key"), keyUID)
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
	release := func(label string) aptrepo.Release {
		return aptrepo.Release{Origin: Label, Label: label, Archs: []string{a.Deb},
			Description: Label + " stand-in repository (test only; not NVIDIA's)"}
	}
	readme := "This is the " + Label + " (gpukit's test/gpusim), test only: stand-ins of NVIDIA's\n" +
		"package repositories with NVIDIA's package names and versions, signed with a TEST key\n" +
		"(" + key.Fingerprint + "). Nothing here is NVIDIA software.\n"
	tree := aptrepo.Tree{
		Repos: map[string]aptrepo.Repo{
			cudaDir: {Debs: cudaPackages(a, bin, key.Binary, nvidiaCUDA+"debian12/"+a.CUDA+"/"),
				Release: release("NVIDIA CUDA")}, // the label cuda-keyring's pin names
			toolkitDir: {Debs: toolkitPackages(a, bin), Release: release("libnvidia-container")},
		},
		// The keys where NVIDIA's repositories have them, under NVIDIA's names;
		// the hosts trust them by the test key's fingerprint (the inventory's
		// spec.mirrors.signingKeys.nvidia), as a site's re-signed mirror.
		Files: map[string][]byte{cudaDir + cudaKeyFile: key.Armored, "libnvidia-container/gpgkey": key.Armored, "README": []byte(readme)},
		Key:   key,
	}
	dir, hash, reused, err := tree.Publish(ctx, filepath.Join(labDir, "repo", "www", "gpusim"))
	if err != nil {
		return Repo{}, err
	}
	base := "http://" + bridge + ":" + repoPort + "/gpusim/" + hash + "/"
	return Repo{URL: base, CUDA: base + cudaDir, ContainerToolkit: base + "libnvidia-container/", Dir: dir,
		KeyFingerprint: key.Fingerprint, Reused: reused}, nil
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

// DCGMExporter builds the dcgm-exporter stand-in (static, for an image on
// the lab's nodes) into a temporary directory of t and returns its path.
func DCGMExporter(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dcgm-exporter")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out,
		"github.com/gpukit/gpukit/test/gpusim/cmd/dcgm-exporter")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if root, err := fixtures.Root(); err == nil { // in the module, whatever the test's working directory
		cmd.Dir = root
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpusim: building the dcgm-exporter stand-in: %v\n%s", err, b)
	}
	return out
}

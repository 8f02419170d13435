package gpusim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/aptrepo"
)

func TestPublishBuildsSignedRepositoriesOnce(t *testing.T) {
	aptrepo.RequireTools(t, "dpkg-deb", "dpkg-scanpackages", "gpg", "gpgv")
	labDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	r, err := Publish(ctx, labDir, "10.251.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(began)
	if r.Reused {
		t.Fatal("a first publish in an empty lab dir reports a reused repository")
	}
	began = time.Now()
	again, err := Publish(ctx, labDir, "10.251.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("publish: cold %s, warm %s (%s)", cold.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), r.URL)
	if !again.Reused || again.Dir != r.Dir || again.URL != r.URL {
		t.Fatalf("second publish %+v, want the first one reused: %+v", again, r)
	}
	if !strings.HasPrefix(r.Dir, filepath.Join(labDir, "repo", "www", "gpusim")+"/") ||
		!strings.HasPrefix(r.URL, "http://10.251.0.1:8080/gpusim/") || !strings.HasSuffix(r.URL, "/") {
		t.Fatalf("repository at %s (%s): not under the lab repository's web root", r.Dir, r.URL)
	}
	checkNoSecretKey(t, labDir)

	cuda := filepath.Join(r.Dir, "cuda/repos/debian12/x86_64")
	toolkit := filepath.Join(r.Dir, "libnvidia-container/stable/deb/amd64")
	keyring := filepath.Join(labDir, "repo", "gpusim-key", "public.gpg")
	for _, d := range []string{cuda, toolkit} {
		out, err := exec.Command("gpgv", "--keyring", keyring, filepath.Join(d, "InRelease")).CombinedOutput()
		if err != nil {
			t.Errorf("InRelease of %s does not verify with the test key: %v\n%s", d, err, out)
		}
		out, err = exec.Command("gpgv", "--keyring", keyring, filepath.Join(d, "Release.gpg"), filepath.Join(d, "Release")).CombinedOutput()
		if err != nil {
			t.Errorf("Release.gpg of %s does not verify: %v\n%s", d, err, out)
		}
	}
	packages, err := os.ReadFile(filepath.Join(cuda, "Packages"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Package: nvidia-open\nVersion: 580.95.05-1", "Package: nvidia-open\nVersion: 590.48.01-1",
		"Package: cuda-drivers\nVersion: 580.95.05-1", "Package: nvidia-kernel-open-dkms\nVersion: 580.95.05-1",
		"Package: nvidia-fabricmanager\nVersion: 590.48.01-1", "Package: cuda-toolkit-13-0\n",
		"Package: cuda-keyring\nVersion: 1.1-1", "Depends: nvidia-driver (= 580.95.05-1), nvidia-kernel-open-dkms (= 580.95.05-1)",
	} {
		if !strings.Contains(string(packages), want) {
			t.Errorf("CUDA Packages lacks %q", want)
		}
	}
	tk, err := os.ReadFile(filepath.Join(toolkit, "Packages"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ContainerToolkitVersions() {
		for _, p := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
			if !strings.Contains(string(tk), "Package: "+p+"\nVersion: "+v+"\n") {
				t.Errorf("toolkit Packages lacks %s %s", p, v)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "libnvidia-container/gpgkey")); err != nil || !strings.Contains(string(b), "BEGIN PGP PUBLIC KEY BLOCK") {
		t.Errorf("gpgkey: %v %q", err, b)
	}

	// cuda-keyring installs the test key as a binary keyring and NVIDIA's source line
	kr := filepath.Join(cuda, "cuda-keyring_1.1-1_all.deb")
	x := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-x", kr, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(x, "usr/share/keyrings/cuda-archive-keyring.gpg"))
	want, _ := os.ReadFile(keyring)
	if len(got) == 0 || string(got) != string(want) {
		t.Error("cuda-keyring's cuda-archive-keyring.gpg is not the test key (binary)")
	}
	list, _ := os.ReadFile(filepath.Join(x, "etc/apt/sources.list.d/cuda-debian12-x86_64.list"))
	if !strings.HasSuffix(string(list), "\ndeb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n") {
		t.Errorf("cuda-keyring's source list: %q", list)
	}
	// every stand-in says what it is
	debs, _ := filepath.Glob(filepath.Join(cuda, "*.deb"))
	more, _ := filepath.Glob(filepath.Join(toolkit, "*.deb"))
	if len(debs) < 30 || len(more) != 8 {
		t.Fatalf("%d CUDA and %d toolkit packages", len(debs), len(more))
	}
	for _, deb := range append(debs, more...) {
		x := t.TempDir()
		name := filepath.Base(deb)
		if out, err := exec.Command("dpkg-deb", "-x", deb, x).CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb -x %s: %v\n%s", name, err, out)
		}
		err := filepath.WalkDir(x, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Type()&os.ModeSymlink != 0 {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil && !strings.Contains(string(b), Label) {
				t.Errorf("%s: %s does not say it is the %s", name, strings.TrimPrefix(p, x), Label)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestConcurrentPublishersShareOneRepository(t *testing.T) {
	aptrepo.RequireTools(t, "dpkg-deb", "dpkg-scanpackages", "gpg")
	labDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n = 3
	repos := make([]Repo, n)
	errs := make([]error, n)
	done := make(chan int)
	for i := range n {
		go func() { repos[i], errs[i] = Publish(ctx, labDir, "10.251.0.1"); done <- i }()
	}
	for range n {
		<-done
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("publisher %d: %v", i, errs[i])
		}
		if repos[i].URL != repos[0].URL {
			t.Fatalf("publishers disagree: %s, %s", repos[i].URL, repos[0].URL)
		}
	}
	entries, err := os.ReadDir(filepath.Join(labDir, "repo", "www", "gpusim"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("web root holds %v, want the one repository (no half-built ones)", names)
	}
	fpr, _ := os.ReadFile(filepath.Join(labDir, "repo", "gpusim-key", "fingerprint"))
	if strings.TrimSpace(string(fpr)) != repos[0].KeyFingerprint {
		t.Fatalf("the repository is signed with %s, the kept key is %s", repos[0].KeyFingerprint, fpr)
	}
	// the index verifies with the one key every publisher used
	out, err := exec.Command("gpgv", "--keyring", filepath.Join(labDir, "repo", "gpusim-key", "public.gpg"),
		filepath.Join(repos[0].Dir, "cuda/repos/debian12/x86_64/InRelease")).CombinedOutput()
	if err != nil {
		t.Fatalf("gpgv: %v\n%s", err, out)
	}
}

// checkNoSecretKey fails t when the lab repository's web root serves the test
// signing key's secret part: a file named like one, the key file's contents,
// or any "PRIVATE KEY" block.
func checkNoSecretKey(t *testing.T, labDir string) {
	t.Helper()
	secret, err := os.ReadFile(filepath.Join(labDir, "repo", "gpusim-key", "secret.asc"))
	if err != nil || !bytes.Contains(secret, []byte("PRIVATE KEY")) {
		t.Fatalf("the kept secret key does not read as one (%v): the check below would not see it either", err)
	}
	www := filepath.Join(labDir, "repo", "www")
	files := 0
	err = filepath.WalkDir(www, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		name := e.Name()
		if strings.HasPrefix(name, "secret") || strings.HasSuffix(name, ".key") || strings.Contains(p, "private-keys") {
			t.Errorf("the web root holds %s: a secret key file", strings.TrimPrefix(p, www))
		}
		if e.Type()&os.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err == nil && !strings.HasPrefix(target, www+"/") {
				t.Errorf("the web root links %s to %s, outside it", strings.TrimPrefix(p, www), target)
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("PRIVATE KEY")) || bytes.Contains(b, bytes.TrimSpace(secret)) {
			t.Errorf("the web root serves %s, which holds a private key", strings.TrimPrefix(p, www))
		}
		// the packages (cuda-keyring) carry keys too: look inside them
		if strings.HasSuffix(name, ".deb") {
			out, err := exec.Command("dpkg-deb", "--fsys-tarfile", p).Output()
			if err != nil {
				return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w", p, err)
			}
			if bytes.Contains(out, []byte("PRIVATE KEY")) {
				t.Errorf("package %s holds a private key", strings.TrimPrefix(p, www))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 30 {
		t.Fatalf("the web root %s holds %d files: the repositories are not there to check", www, files)
	}
}

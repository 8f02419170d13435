package gpusim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The stand-in repositories are signed with a TEST key made for the
// simulator: apt on the lab hosts checks the signatures as it checks
// NVIDIA's, against the keyring cuda-keyring installs (and the container
// toolkit's gpgkey). The key is made once per lab directory with gpg in a
// temporary GNUPGHOME and kept outside the web root.

const keyUID = "gpukit GPU SIMULATOR test repository key (NOT NVIDIA; test only) <gpusim@gpukit.invalid>"

// testKey is the simulator's signing key.
type testKey struct {
	dir         string // $LAB/repo/gpusim-key
	Fingerprint string
	Armored     []byte // public key, ASCII-armored (the container toolkit's gpgkey)
	Binary      []byte // public key, binary keyring (cuda-archive-keyring.gpg)
}

// loadKey returns the key kept in dir, making it first if there is none.
// Concurrent callers (test packages running at once) wait on a lock.
func loadKey(ctx context.Context, dir string) (testKey, error) {
	k := testKey{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return k, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return k, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return k, err
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.asc")); err != nil {
		if err := makeKey(ctx, dir); err != nil {
			return k, fmt.Errorf("gpusim: making the test signing key: %w", err)
		}
	}
	fpr, err := os.ReadFile(filepath.Join(dir, "fingerprint"))
	if err != nil {
		return k, err
	}
	k.Fingerprint = strings.TrimSpace(string(fpr))
	if k.Armored, err = os.ReadFile(filepath.Join(dir, "public.asc")); err != nil {
		return k, err
	}
	if k.Binary, err = os.ReadFile(filepath.Join(dir, "public.gpg")); err != nil {
		return k, err
	}
	return k, nil
}

// gnupg runs gpg commands in a temporary GNUPGHOME and stops its agent after.
type gnupg struct{ home string }

func newGnupg() (*gnupg, error) {
	// a short path: gpg-agent's socket path must fit in sun_path
	home, err := os.MkdirTemp("", "gpusim-gpg")
	if err != nil {
		return nil, err
	}
	return &gnupg{home: home}, os.Chmod(home, 0o700)
}

func (g *gnupg) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	if _, err := exec.LookPath("gpg"); err != nil {
		return nil, fmt.Errorf("gpg is not installed (apt-get install gnupg; hack/install-deps.sh does): %w", err)
	}
	c := exec.CommandContext(ctx, "gpg", append([]string{"--batch", "--quiet", "--homedir", g.home,
		"--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	c.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("gpg %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

func (g *gnupg) close() {
	_ = exec.Command("gpgconf", "--homedir", g.home, "--kill", "all").Run()
	os.RemoveAll(g.home)
}

func makeKey(ctx context.Context, dir string) error {
	g, err := newGnupg()
	if err != nil {
		return err
	}
	defer g.close()
	if _, err := g.run(ctx, nil, "--quick-gen-key", keyUID, "ed25519", "sign", "never"); err != nil {
		return err
	}
	colons, err := g.run(ctx, nil, "--with-colons", "--list-secret-keys")
	if err != nil {
		return err
	}
	var fpr string
	for line := range strings.Lines(string(colons)) {
		if f := strings.Split(line, ":"); f[0] == "fpr" && len(f) > 9 {
			fpr = f[9]
			break
		}
	}
	if fpr == "" {
		return fmt.Errorf("no fingerprint in gpg's listing")
	}
	secret, err := g.run(ctx, nil, "--armor", "--export-secret-keys", fpr)
	if err != nil {
		return err
	}
	armored, err := g.run(ctx, nil, "--armor", "--export", fpr)
	if err != nil {
		return err
	}
	binary, err := g.run(ctx, nil, "--export", fpr)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"public.asc": armored, "public.gpg": binary, "fingerprint": []byte(fpr + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	// written last: its presence means the key is complete
	return writeFileAtomic(filepath.Join(dir, "secret.asc"), secret, 0o600)
}

// signRelease writes InRelease (clear-signed) and Release.gpg (detached) next
// to each Release file.
func (k testKey) signRelease(ctx context.Context, releases ...string) error {
	secret, err := os.ReadFile(filepath.Join(k.dir, "secret.asc"))
	if err != nil {
		return err
	}
	g, err := newGnupg()
	if err != nil {
		return err
	}
	defer g.close()
	if _, err := g.run(ctx, secret, "--import"); err != nil {
		return err
	}
	for _, rel := range releases {
		d := filepath.Dir(rel)
		if _, err := g.run(ctx, nil, "--local-user", k.Fingerprint, "--digest-algo", "SHA512",
			"--clearsign", "--output", filepath.Join(d, "InRelease"), rel); err != nil {
			return err
		}
		if _, err := g.run(ctx, nil, "--local-user", k.Fingerprint, "--digest-algo", "SHA512",
			"--armor", "--detach-sign", "--output", filepath.Join(d, "Release.gpg"), rel); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

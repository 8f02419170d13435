package aptrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Key is a test signing key kept in a directory outside any web root, made
// once with gpg in a temporary GNUPGHOME: apt on the lab hosts checks the
// repositories' signatures as it checks the real ones'. The directory holds
// secret.asc (the secret key, 0600), public.asc, public.gpg and fingerprint.
type Key struct {
	Fingerprint string
	Armored     []byte // public key, ASCII-armored
	Binary      []byte // public key, binary keyring
	dir         string
}

// LoadKey returns the key kept in dir, making it first with user ID uid if
// there is none (a kept key is used whatever its user ID). Concurrent
// callers, in this process or others (test packages running at once), wait
// on a flock.
func LoadKey(ctx context.Context, dir, uid string) (Key, error) {
	k, err := loadKey(ctx, dir, uid)
	if err != nil {
		return Key{}, fmt.Errorf("aptrepo: test signing key in %s: %w", dir, err)
	}
	return k, nil
}

func loadKey(ctx context.Context, dir, uid string) (Key, error) {
	k := Key{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return k, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return k, err
	}
	defer lock.Close() // releases the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return k, err
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.asc")); err != nil {
		if uid == "" {
			return k, errors.New("no key yet, and no user ID to make one with")
		}
		if err := makeKey(ctx, dir, uid); err != nil {
			return k, fmt.Errorf("making it: %w", err)
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
	home, err := os.MkdirTemp("", "aptrepo-gpg")
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

func makeKey(ctx context.Context, dir, uid string) error {
	g, err := newGnupg()
	if err != nil {
		return err
	}
	defer g.close()
	if _, err := g.run(ctx, nil, "--quick-gen-key", uid, "ed25519", "sign", "never"); err != nil {
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
		return errors.New("no fingerprint in gpg's listing")
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

// Sign writes InRelease (clear-signed) and Release.gpg (detached) next to
// each Release file.
func (k Key) Sign(ctx context.Context, releases ...string) error {
	if err := k.sign(ctx, releases); err != nil {
		return fmt.Errorf("aptrepo: signing with the test key %s: %w", k.Fingerprint, err)
	}
	return nil
}

func (k Key) sign(ctx context.Context, releases []string) error {
	if k.dir == "" {
		return errors.New("not a key from LoadKey")
	}
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
			"--yes", "--clearsign", "--output", filepath.Join(d, "InRelease"), rel); err != nil {
			return err
		}
		if _, err := g.run(ctx, nil, "--local-user", k.Fingerprint, "--digest-algo", "SHA512",
			"--yes", "--armor", "--detach-sign", "--output", filepath.Join(d, "Release.gpg"), rel); err != nil {
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

// PrimaryFingerprints reads gpg --with-colons output (--show-keys, --list-keys):
// each primary key's fingerprint, the first fpr record after its pub (rvk
// records may come between; a sub's fpr is not a primary's).
func PrimaryFingerprints(colons []byte) []string {
	var out []string
	primary := false
	for _, line := range strings.Split(string(colons), "\n") {
		switch f := strings.Split(line, ":"); f[0] {
		case "pub":
			primary = true
		case "sub":
			primary = false
		case "fpr":
			if primary && len(f) > 9 {
				out = append(out, f[9])
			}
			primary = false
		}
	}
	return out
}

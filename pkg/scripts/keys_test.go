package scripts

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/aptrepo"
)

// keyFunctions are the signing-key functions (templates/lib/keys.tmpl) as
// scripts render them, fetch reading file:// URLs.
func keyFunctions(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(Prelude)
	if err := kubePackagesTemplate.t().ExecuteTemplate(&b, "keys", nil); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nfetch() { cp -- \"${1#file://}\" \"$2\"; }\n")
	return b.String()
}

// testKeys makes OpenPGP keys with gpg in a temporary home.
type testKeys struct {
	t    *testing.T
	home string
}

func newTestKeys(t *testing.T) *testKeys {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("no gpg: " + err.Error())
	}
	home, err := os.MkdirTemp("", "gpukit-keys") // short: gpg-agent's socket path
	if err != nil {
		t.Fatal(err)
	}
	k := &testKeys{t: t, home: home}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	return k
}

func (k *testKeys) gpg(args ...string) []byte {
	k.t.Helper()
	cmd := exec.Command("gpg", append([]string{"--homedir", k.home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		k.t.Fatalf("gpg %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// make creates a key for uid (algo: ed25519 with an encryption subkey, or
// rsa3072 as the package repositories' keys are) and returns its
// fingerprint as gpg prints it.
func (k *testKeys) make(uid, algo string) string {
	k.gpg("--quick-gen-key", uid, algo, "sign", "never")
	fpr := k.fingerprints(k.gpg("--export", uid))[0]
	if algo == "ed25519" {
		k.gpg("--quick-add-key", fpr, "cv25519", "encr", "never")
	}
	return fpr
}

// fingerprints are gpg's reading of the primary keys in an export.
func (k *testKeys) fingerprints(export []byte) []string {
	k.t.Helper()
	f := filepath.Join(k.t.TempDir(), "key")
	if err := os.WriteFile(f, export, 0o600); err != nil {
		k.t.Fatal(err)
	}
	return aptrepo.PrimaryFingerprints(k.gpg("--with-colons", "--show-keys", f))
}

// newFormat rewrites every packet of binary OpenPGP data with a new-format
// header (RFC 4880 4.2.2): the shortest length, or always five octets.
func newFormat(t *testing.T, b []byte, fiveOctets bool) []byte {
	t.Helper()
	var out []byte
	for len(b) > 0 {
		ctb := b[0]
		if ctb&0xc0 != 0x80 {
			t.Fatalf("not an old-format packet: %#x", ctb)
		}
		tag := (ctb >> 2) & 15
		var n, hl int
		switch ctb & 3 {
		case 0:
			n, hl = int(b[1]), 2
		case 1:
			n, hl = int(binary.BigEndian.Uint16(b[1:])), 3
		case 2:
			n, hl = int(binary.BigEndian.Uint32(b[1:])), 5
		default:
			t.Fatal("indeterminate length")
		}
		out = append(out, 0xc0|tag)
		switch {
		case fiveOctets:
			out = append(out, 0xff)
			out = binary.BigEndian.AppendUint32(out, uint32(n))
		case n < 192:
			out = append(out, byte(n))
		case n < 8384:
			out = append(out, byte((n-192)>>8+192), byte((n-192)&255))
		default:
			out = append(out, 0xff)
			out = binary.BigEndian.AppendUint32(out, uint32(n))
		}
		out = append(out, b[hl:hl+n]...)
		b = b[hl+n:]
	}
	return out
}

// synthetic is a one-packet public key of the given version with its
// fingerprint (RFC 9580 5.5.4): the structure is all the fingerprint needs.
func synthetic(version byte) ([]byte, string) {
	body := append([]byte{version}, bytes.Repeat([]byte{0x5a}, 300)...)
	var fpr []byte
	if version == 4 {
		h := sha1.New()
		h.Write([]byte{0x99, byte(len(body) >> 8), byte(len(body))})
		h.Write(body)
		fpr = h.Sum(nil)
	} else {
		h := sha256.New()
		h.Write([]byte{0x95 + version})
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
		h.Write(body)
		fpr = h.Sum(nil)
	}
	pkt := []byte{0xc6, byte((len(body)-192)>>8 + 192), byte((len(body) - 192) & 255)}
	return append(pkt, body...), strings.ToUpper(hex.EncodeToString(fpr))
}

// The fingerprints computed in the script are gpg's, for every way a key
// is written: armored or binary, old- or new-format packets, RSA or EdDSA
// with subkeys, several keys in one file, v4, v5 and v6 keys.
func TestKeyFingerprints(t *testing.T) {
	t.Parallel()
	keys := newTestKeys(t)
	ed := keys.make("gpukit test ed25519 <ed@gpukit.invalid>", "ed25519")
	rsa := keys.make("gpukit test rsa <rsa@gpukit.invalid>", "rsa3072")
	edBin, rsaBin := keys.gpg("--export", ed), keys.gpg("--export", rsa)
	both := keys.gpg("--export", ed, rsa)
	if got := keys.fingerprints(both); len(got) != 2 || got[0] != ed || got[1] != rsa {
		t.Fatalf("gpg reads %v", got)
	}
	armored := keys.gpg("--armor", "--export", rsa)
	withHeaders := strings.Replace(string(armored), "-----BEGIN PGP PUBLIC KEY BLOCK-----\n",
		"Some text before the block\n-----BEGIN PGP PUBLIC KEY BLOCK-----\nVersion: GnuPG v2\nComment: a site's mirror\n", 1)
	v4, v4fpr := synthetic(4)
	v5, v5fpr := synthetic(5)
	v6, v6fpr := synthetic(6)
	secret := keys.gpg("--export-secret-keys", ed)

	dir := t.TempDir()
	fns := keyFunctions(t)
	for _, tc := range []struct {
		name string
		data []byte
		want []string // nil: refused
	}{
		{"ed25519, binary", edBin, []string{ed}},
		{"rsa3072, armored", armored, []string{rsa}},
		{"armored with headers and text around", []byte(withHeaders), []string{rsa}},
		{"armored with CRLF line ends", []byte(strings.ReplaceAll(string(armored), "\n", "\r\n")), []string{rsa}},
		{"two keys", both, []string{ed, rsa}},
		{"new-format packets", newFormat(t, both, false), []string{ed, rsa}},
		{"new-format packets, 5-octet lengths", newFormat(t, rsaBin, true), []string{rsa}},
		{"v4, synthetic", v4, []string{v4fpr}},
		{"v5, synthetic", v5, []string{v5fpr}},
		{"v6, synthetic", v6, []string{v6fpr}},
		{"a secret key", secret, nil},
		{"truncated", edBin[:len(edBin)-7], nil},
		{"trailing bytes", append(append([]byte{}, edBin...), 0x00, 0x01), nil},
		{"two armored blocks", append(append([]byte{}, armored...), armored...), nil},
		{"armor without its end", armored[:len(armored)-40], nil},
		{"not a key", []byte("<html>404 Not Found</html>\n"), nil},
		{"empty", nil, nil},
		{"a signature only", []byte{0x88, 0x01, 0x04}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(f, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "-c", fns+`key_binary "$1" "$1.bin" && key_fingerprints "$1.bin"`, "-", f).CombinedOutput()
			got := strings.Fields(string(out))
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("read as %q, want a refusal", got)
			case tc.want != nil && err != nil:
				t.Errorf("%v: %s", err, out)
			case tc.want != nil && strings.Join(got, " ") != strings.Join(tc.want, " "):
				t.Errorf("fingerprints %q, want %q", got, tc.want)
			}
		})
	}
}

// pinned_key installs a key only when every key in it is pinned, checks a
// keyring already there on every run, and writes what apt reads: the binary
// key that was checked, or the armored file as fetched.
func TestPinnedKey(t *testing.T) {
	t.Parallel()
	keys := newTestKeys(t)
	good := keys.make("gpukit test pinned <pinned@gpukit.invalid>", "ed25519")
	evil := keys.make("gpukit test unpinned <evil@gpukit.invalid>", "ed25519")
	srv := t.TempDir()
	write := func(name string, b []byte) string {
		if err := os.WriteFile(filepath.Join(srv, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return "file://" + filepath.Join(srv, name)
	}
	goodURL := write("good.asc", keys.gpg("--armor", "--export", good))
	evilURL := write("evil.asc", keys.gpg("--armor", "--export", evil))
	bothURL := write("both.gpg", keys.gpg("--export", good, evil))
	goodBin := keys.gpg("--export", good)
	other := "0123456789ABCDEF0123456789ABCDEF01234567"
	fns := keyFunctions(t)
	run := func(keyring, url, format string, pins ...string) (string, int) {
		args := append([]string{"-c", fns + `if pinned_key "$@"; then echo CHANGED; else echo KEPT; fi`, "-", url, keyring, format}, pins...)
		out, err := exec.Command("bash", args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	read := func(f string) []byte { b, _ := os.ReadFile(f); return b }

	d := t.TempDir()
	keyring := filepath.Join(d, "keyrings", "repo.gpg")
	out, rc := run(keyring, goodURL, "gpg", other, good)
	if rc != 0 || !strings.Contains(out, "CHANGED") || !bytes.Equal(read(keyring), goodBin) {
		t.Fatalf("first install: rc %d\n%s", rc, out)
	}
	if out, rc = run(keyring, evilURL, "gpg", good); rc != 0 || !strings.Contains(out, "KEPT") {
		t.Errorf("a keyring holding the pinned key is kept (not fetched again): rc %d\n%s", rc, out)
	}

	// Refusals: the keyring is not written, and the message names the key.
	for _, tc := range []struct{ name, url, want string }{
		{"another key", evilURL, "key " + evil + " is not pinned (pinned: " + good + ")"},
		{"the pinned key and another", bothURL, "key " + evil + " is not pinned"},
		{"not a key", write("page.html", []byte("<html>mirror error</html>")), "not an OpenPGP public key"},
		{"not there", "file://" + filepath.Join(srv, "missing"), "cannot download the signing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kr := filepath.Join(t.TempDir(), "repo.gpg")
			out, rc := run(kr, tc.url, "gpg", good)
			if rc != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("rc %d, want 1 and %q:\n%s", rc, tc.want, out)
			}
			if _, err := os.Stat(kr); err == nil {
				t.Error("the keyring was written")
			}
		})
	}

	// A keyring already on the host is checked too: another key (planted,
	// or the upstream key when the site re-signs) or an armored file where
	// apt wants a binary one is replaced by the pinned key.
	for name, data := range map[string][]byte{
		"another key": keys.gpg("--export", evil), "the pinned key and another": keys.gpg("--export", good, evil),
		"armored": keys.gpg("--armor", "--export", good), "garbage": []byte("junk"),
	} {
		t.Run("replaces "+name, func(t *testing.T) {
			kr := filepath.Join(t.TempDir(), "repo.gpg")
			if err := os.WriteFile(kr, data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, rc := run(kr, goodURL, "gpg", good)
			if rc != 0 || !strings.Contains(out, "does not hold only a pinned key") || !strings.Contains(out, "CHANGED") || !bytes.Equal(read(kr), goodBin) {
				t.Errorf("rc %d:\n%s", rc, out)
			}
		})
	}

	// asc: the armored key as fetched (rpm imports armored keys only).
	asc := filepath.Join(d, "rpm-gpg", "repo.asc")
	if out, rc := run(asc, goodURL, "asc", good); rc != 0 || !bytes.Equal(read(asc), read(strings.TrimPrefix(goodURL, "file://"))) {
		t.Errorf("asc: rc %d\n%s", rc, out)
	}
	if out, rc := run(asc, goodURL, "asc", good); rc != 0 || !strings.Contains(out, "KEPT") {
		t.Errorf("asc, again: rc %d\n%s", rc, out)
	}
}

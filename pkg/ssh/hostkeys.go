package ssh

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/safetext"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeys verifies the keys of one host against a known_hosts file and,
// with acceptNew, records the key of a host seen for the first time.
type hostKeys struct {
	name      string // inventory name, for errors
	file      string
	acceptNew bool
}

// load is the known_hosts file as it is now, so that a key recorded by a
// concurrent dial (or an operator's edit) is seen. A missing file is empty.
// The file is parsed again only when its size or status change time
// changed: every dial reads it twice, and a fan-out of N dials parsing N
// hosts' lines each grew as N squared (100 hosts: 42% of a preflight's
// allocations).
func (h hostKeys) load() (gossh.HostKeyCallback, error) {
	st, err := os.Stat(h.file)
	if errors.Is(err, fs.ErrNotExist) {
		return knownhosts.New()
	}
	if err != nil {
		return nil, fmt.Errorf("ssh: known_hosts %s: %w", h.file, err)
	}
	parsed.Lock()
	defer parsed.Unlock() // one parse however many dials ask at once
	c, ok := parsed.files[h.file]
	ok = ok && c.size == st.Size() && c.mod.Equal(changed(st))
	// Racily clean (as git says): a file changed within its clock's
	// granularity of the parse may keep size and time; compare it.
	var data []byte
	if ok && time.Since(changed(st)) < racyWindow {
		if data, err = os.ReadFile(h.file); err != nil {
			return nil, fmt.Errorf("ssh: known_hosts %s: %w", h.file, err)
		}
		ok = bytes.Equal(data, c.data)
	}
	if ok {
		return c.cb, nil
	}
	if data == nil {
		if data, err = os.ReadFile(h.file); err != nil {
			return nil, fmt.Errorf("ssh: known_hosts %s: %w", h.file, err)
		}
	}
	cb, err := knownhosts.New(h.file)
	if err != nil {
		return nil, fmt.Errorf("ssh: known_hosts %s: %w", h.file, err)
	}
	parsed.files[h.file] = parsedFile{size: st.Size(), mod: changed(st), data: data, cb: cb, parses: c.parses + 1}
	return cb, nil
}

// racyWindow is how recent a modification time may hide a change of the
// same size: file systems stamp times at a few milliseconds' granularity.
const racyWindow = 2 * time.Second

// parsed holds each known_hosts file as last parsed, with the size and
// status change time it had then. Its callbacks only read their keys: dials
// share them.
var parsed = struct {
	sync.Mutex
	files map[string]parsedFile
}{files: map[string]parsedFile{}}

type parsedFile struct {
	size   int64
	mod    time.Time
	data   []byte // what was parsed, for a racily clean file
	cb     gossh.HostKeyCallback
	parses int // how often the file was parsed (tests)
}

// algorithms returns the host key algorithms to ask hostport for: those of
// the keys on record, so that a host with an ed25519 key on record is not
// asked for its RSA key and then mistaken for a changed host. Nil (the
// library's default order) when nothing is on record.
func (h hostKeys) algorithms(hostport string) ([]string, error) {
	cb, err := h.load()
	if err != nil {
		return nil, err
	}
	// A key nobody has: the lookup fails and lists every key on record.
	probe, err := gossh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		return nil, fmt.Errorf("ssh: probe key: %w", err)
	}
	var keyErr *knownhosts.KeyError
	if err := cb(hostport, zeroTCPAddr(), probe); !errors.As(err, &keyErr) {
		return nil, nil
	}
	var algos []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	for _, k := range keyErr.Want {
		switch t := k.Key.Type(); t {
		case gossh.KeyAlgoRSA:
			add(gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return algos, nil
}

// callback is the ssh.HostKeyCallback for one dial.
func (h hostKeys) callback(hostname string, remote net.Addr, key gossh.PublicKey) error {
	cb, err := h.load()
	if err != nil {
		return err
	}
	if err := h.classify(hostname, key, cb(hostname, tcpAddr(remote), key)); !isUnknown(err) || !h.acceptNew {
		return err
	}
	return h.record(hostname, key)
}

// classify turns a knownhosts result into this package's typed errors.
func (h hostKeys) classify(hostname string, key gossh.PublicKey, err error) error {
	if err == nil {
		return nil
	}
	var (
		keyErr  *knownhosts.KeyError
		revoked *knownhosts.RevokedError
	)
	switch {
	case errors.As(err, &revoked):
		return &HostKeyRevokedError{Host: h.name, Address: hostname, Got: gossh.FingerprintSHA256(key),
			Line: fmt.Sprintf("%s:%d", revoked.Revoked.Filename, revoked.Revoked.Line)}
	case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
		e := &HostKeyChangedError{Host: h.name, Address: hostname, Got: gossh.FingerprintSHA256(key),
			KeyType: key.Type(), File: h.file}
		for _, w := range keyErr.Want {
			e.Want = append(e.Want, gossh.FingerprintSHA256(w.Key))
			e.Lines = append(e.Lines, fmt.Sprintf("%s:%d", w.Filename, w.Line))
		}
		return e
	case errors.As(err, &keyErr):
		return &UnknownHostError{Host: h.name, Address: hostname, Fingerprint: gossh.FingerprintSHA256(key),
			KeyType: key.Type(), File: h.file}
	}
	return fmt.Errorf("ssh: host key of %s (%s): %w", h.name, hostname, err)
}

func isUnknown(err error) bool {
	var u *UnknownHostError
	return errors.As(err, &u)
}

// record appends hostname's key to the known_hosts file under an exclusive
// file lock, after checking again under the lock: a concurrent dial may have
// recorded the same host meanwhile (fine) or a different key for it (refused,
// exactly as if it had been on record before).
func (h hostKeys) record(hostname string, key gossh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(h.file), 0o700); err != nil {
		return fmt.Errorf("ssh: record host key of %s: %w", h.name, err)
	}
	f, err := os.OpenFile(h.file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("ssh: record host key of %s: %w", h.name, err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("ssh: lock %s: %w", h.file, err)
	}
	defer unlockFile(f) //nolint:errcheck // closing the file releases it anyway

	cb, err := h.load()
	if err != nil {
		return err
	}
	if err := h.classify(hostname, key, cb(hostname, zeroTCPAddr(), key)); !isUnknown(err) {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("ssh: read %s: %w", h.file, err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("ssh: record host key of %s in %s: %w", h.name, h.file, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ssh: record host key of %s in %s: %w", h.name, h.file, err)
	}
	return nil
}

// zeroTCPAddr stands in for the remote address: knownhosts requires a TCP
// address but checks the host name given to the handshake.
func zeroTCPAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero} }

func tcpAddr(a net.Addr) net.Addr {
	if _, ok := a.(*net.TCPAddr); ok {
		return a
	}
	return zeroTCPAddr()
}

// knownHostsPattern is how ssh-keygen -R names hostport.
func knownHostsPattern(hostport string) string {
	n := knownhosts.Normalize(hostport)
	if strings.HasPrefix(n, "[") {
		return "'" + n + "'"
	}
	return n
}

func splitHostPort(hostport string) (host, port string) {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, strconv.Itoa(DefaultPort)
	}
	return h, p
}

// maxKnownHosts bounds the known_hosts file CheckKnownHostsFile reads.
const maxKnownHosts = 64 << 20

// CheckKnownHostsFile refuses a file that exists but is not a known_hosts
// file: a line that is not "[marker] hosts key-type base64-key [comment]"
// means the inventory points at some other file (a shell rc file, a key),
// which gpukit would read host keys from and, trusting new hosts, append to.
// Entries with key types this library cannot parse still pass: a real
// known_hosts file may hold them. A missing file is fine (it is created).
func CheckKnownHostsFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("known_hosts file %s: %w", safetext.Name(path), err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("known_hosts file %s is not a regular file", safetext.Name(path))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKnownHosts))
	if err != nil {
		return fmt.Errorf("known_hosts file %s: %w", safetext.Name(path), err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || looksLikeKnownHost(line) {
			continue
		}
		return fmt.Errorf("known_hosts file %s: line %d is not a known_hosts entry (hosts key-type base64-key): "+
			"is it another kind of file? gpukit reads host keys from it and, with --accept-new-host-keys, appends to it",
			safetext.Name(path), i+1)
	}
	return nil
}

// looksLikeKnownHost reports whether line has the shape of a known_hosts
// entry, whatever its key type.
func looksLikeKnownHost(line string) bool {
	fields := strings.Fields(line)
	if len(fields) > 0 && strings.HasPrefix(fields[0], "@") {
		fields = fields[1:]
	}
	if len(fields) < 3 {
		return false
	}
	keyType, blob := fields[1], fields[2]
	for _, r := range keyType {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("@.-", r)) {
			return false
		}
	}
	b, err := base64.StdEncoding.DecodeString(blob)
	return err == nil && len(b) >= 16
}

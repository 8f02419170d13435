package bundlehost

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Phase names.
const (
	PhaseServe   = "bundle/serve"
	PhaseSources = "bundle/sources"
)

// Where the bundle host keeps what serves the bundle.
const (
	remoteDir      = "/var/lib/gpukit/bundle"
	remoteIncoming = "/var/lib/gpukit/bundle.incoming.tar"
	remoteBinary   = "/usr/local/lib/gpukit/gpukit"
	remoteCert     = "/etc/gpukit/bundle/registry.pem"
	remoteKey      = "/etc/gpukit/bundle/registry-key.pem"
	remoteUnit     = "/etc/systemd/system/gpukit-bundle.service"
)

// Layer serves an inventory's bundle (spec.bundle).
type Layer struct {
	inv *inventory.Inventory
	// binary is the gpukit executable the bundle host runs (linux, its
	// architecture).
	binary     string
	local      func() (*local, error)
	executable func() (executable, error)
	// seen is bundle/serve's ShouldRun's read of a host (*state), by name,
	// for its Run.
	seen sync.Map
}

// local is what this machine has of the bundle.
type local struct {
	manifest    *bundlefs.Manifest
	manifestSum string
	publicKey   []byte
}

// executable is the gpukit the bundle host runs: its sum and its
// architecture as uname -m names it (only bundle/serve needs it).
type executable struct {
	sum, arch string
}

func (l *Layer) readExecutable() (executable, error) {
	var e executable
	var err error
	if e.sum, err = bundlefs.FileSHA256(l.binary); err != nil {
		return e, fmt.Errorf("the gpukit executable for the bundle host: %w", err)
	}
	if e.arch, err = elfArch(l.binary); err != nil {
		return e, fmt.Errorf("the gpukit executable for the bundle host, %s: %w (give gpukit for linux on the host's architecture with --gpukit-binary)", l.binary, err)
	}
	return e, nil
}

// New is the layer of inv, whose bundle host runs binary (the gpukit
// executable built for it).
func New(inv *inventory.Inventory, binary string) *Layer {
	l := &Layer{inv: inv, binary: binary}
	l.local = sync.OnceValues(l.readLocal)
	l.executable = sync.OnceValues(l.readExecutable)
	return l
}

func (l *Layer) readLocal() (*local, error) {
	b := l.inv.Cluster.Spec.Bundle
	m, err := bundlefs.ReadManifest(b.Dir)
	if err != nil {
		return nil, err
	}
	if !m.Complete {
		return nil, fmt.Errorf("the bundle in %s is not complete: %d artifact(s) missing", b.Dir, len(m.Missing))
	}
	out := &local{manifest: m}
	if out.manifestSum, err = bundlefs.FileSHA256(filepath.Join(b.Dir, bundlefs.ManifestFile)); err != nil {
		return nil, err
	}
	if out.publicKey, err = os.ReadFile(filepath.Join(b.Dir, bundlefs.PublicKeyFile)); err != nil {
		return nil, err
	}
	return out, nil
}

// elfArch is a Linux executable's machine as uname -m names it.
func elfArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("not a Linux executable: %w", err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "x86_64", nil
	case elf.EM_AARCH64:
		return "aarch64", nil
	}
	return "", fmt.Errorf("an executable for %s", f.Machine)
}

// Serve is bundle/serve: the bundle host gets the files of the bundle it
// lacks (those whose sum differs from its manifest's), gpukit, the
// registry's certificate and gpukit-bundle.service, which then answers on
// both ports. The other hosts wait for it (it is no host-local phase).
func (l *Layer) Serve() engine.Phase { return &servePhase{l} }

// Sources is bundle/sources: every apt host gets the bundle's repository
// of its distribution as a package source, its key trusted for it only.
func (l *Layer) Sources() engine.Phase { return &sourcesPhase{l} }

func (l *Layer) hostParams(files bool) scripts.BundleHostParams {
	b := l.inv.Cluster.Spec.Bundle
	return scripts.BundleHostParams{Dir: remoteDir, Binary: remoteBinary, Cert: remoteCert, Key: remoteKey, Unit: remoteUnit,
		Port: b.Port, RegistryPort: b.RegistryPort, Files: files}
}

// unit is gpukit-bundle.service.
func (l *Layer) unit() string {
	b := l.inv.Cluster.Spec.Bundle
	return fmt.Sprintf(`# written by gpukit: the offline bundle this site's hosts install from (spec.bundle)
[Unit]
Description=gpukit offline bundle: package repositories and images for this site's hosts
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=%s bundle daemon %s --listen :%d --registry-listen :%d --tls-cert %s --tls-key %s
Restart=always
RestartSec=2
NoNewPrivileges=yes

[Install]
WantedBy=multi-user.target
`, remoteBinary, remoteDir, b.Port, b.RegistryPort, remoteCert, remoteKey)
}

// state is what the host serves, and with files the manifest it holds.
type state struct {
	sums     map[string]string // manifest, binary, cert, key, unit
	active   bool
	manifest *bundlefs.Manifest
}

func (l *Layer) state(ctx context.Context, h *engine.Host, files bool) (*state, error) {
	cmd, err := scripts.BundleHostState(l.hostParams(files))
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return nil, err
	}
	out := string(res.Stdout)
	head, rest, _ := strings.Cut(out, "--- manifest\n")
	s := &state{sums: map[string]string{}}
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if k == "active" {
			s.active = v == "yes"
		} else {
			s.sums[k] = v
		}
	}
	if files && strings.TrimSpace(rest) != "" {
		var m bundlefs.Manifest
		if json.Unmarshal([]byte(rest), &m) == nil {
			s.manifest = &m
		}
	}
	return s, nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type servePhase struct{ l *Layer }

func (*servePhase) Name() string  { return PhaseServe }
func (*servePhase) Title() string { return "Serve the offline bundle from its host (spec.bundle)" }

// Targets is the bundle host only.
func (p *servePhase) Targets(hosts []*engine.Host) []*engine.Host {
	for _, h := range hosts {
		if h.Name() == p.l.inv.Cluster.Spec.Bundle.Host {
			return []*engine.Host{h}
		}
	}
	return nil
}

func (p *servePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	loc, err := p.l.local()
	if err != nil {
		return false, "", err
	}
	exe, err := p.l.executable()
	if err != nil {
		return false, "", err
	}
	f, err := probe.Ensure(ctx, h)
	if err != nil {
		return false, "", err
	}
	if f.Arch != exe.arch {
		return false, "", fmt.Errorf("the bundle host is %s and %s is gpukit for %s: give gpukit for %s with --gpukit-binary", f.Arch, p.l.binary, exe.arch, f.Arch)
	}
	st, err := p.l.state(ctx, h, false)
	if err != nil {
		return false, "", err
	}
	p.l.seen.Store(h.Name(), st) // Run needs it again: no second read
	// A certificate not made yet differs; ShouldRun (dry-run too) makes none.
	want := map[string]string{"manifest": loc.manifestSum, "binary": exe.sum, "cert": "to be made", "key": "to be made", "unit": sum([]byte(p.l.unit()))}
	if cert, key, ok := existingCertificate(p.l.inv.Cluster.Spec.Bundle.Dir, h.Machine.NodeIP()); ok {
		want["cert"], want["key"] = sum(cert), sum(key)
	}
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if st.sums[k] != want[k] {
			differ = append(differ, k)
		}
	}
	if len(differ) == 0 && st.active {
		b := p.l.inv.Cluster.Spec.Bundle
		return false, fmt.Sprintf("bundle %s served on ports %d and %d", loc.manifest.Fingerprint, b.Port, b.RegistryPort), nil
	}
	h.Logf("%s: to do: %s (service active: %v)", PhaseServe, strings.Join(differ, ", "), st.active)
	return true, "", nil
}

func (p *servePhase) Run(ctx context.Context, h *engine.Host) error {
	loc, err := p.l.local()
	if err != nil {
		return err
	}
	b := p.l.inv.Cluster.Spec.Bundle
	// What ShouldRun read; the host's manifest is read only when it is
	// not the bundle's: what the host holds of the bundle then.
	st, _ := p.l.seen.LoadAndDelete(h.Name())
	if st == nil {
		if st, err = p.l.state(ctx, h, false); err != nil {
			return err
		}
	}
	held := st.(*state).sums["manifest"]
	params := p.l.hostParams(false)
	var remove []string
	if held != loc.manifestSum {
		have := map[string]string{}
		if held != "none" {
			full, err := p.l.state(ctx, h, true)
			if err != nil {
				return err
			}
			if full.manifest != nil {
				for _, f := range full.manifest.Files {
					have[f.Path] = f.SHA256
				}
			}
		}
		// The files whose sums differ from what the host holds, the
		// manifest last; and those it holds that the bundle no longer lists.
		var send []string
		var bytesToSend int64
		for _, f := range loc.manifest.Files {
			if have[f.Path] != f.SHA256 {
				send = append(send, f.Path)
				bytesToSend += f.Size
			}
			delete(have, f.Path)
		}
		remove = slices.Sorted(maps.Keys(have))
		send = append(send, bundlefs.ManifestFile)
		h.Logf("%s: sending %d files (%d bytes), removing %d", PhaseServe, len(send), bytesToSend, len(remove))
		size := map[string]int64{}
		for _, f := range loc.manifest.Files {
			size[f.Path] = f.Size
		}
		// In parts: an upload passes through the host's /tmp (often a
		// RAM disk), and a whole bundle is gigabytes. Each part but the
		// last is put in place at once; the last, with the manifest, by
		// the script that then serves.
		parts := inParts(send, size, partBytes)
		for i, part := range parts {
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(writeTar(pw, b.Dir, part)) }()
			err := h.Upload(ctx, fmt.Sprintf("upload the bundle's new files (part %d of %d)", i+1, len(parts)), ssh.File{Path: remoteIncoming, Mode: 0o600, Content: pr, Sudo: true})
			pr.Close()
			if err != nil {
				return err
			}
			if i == len(parts)-1 {
				break
			}
			extract := params
			extract.Incoming, extract.ExtractOnly = remoteIncoming, true
			cmd, err := scripts.BundleHost(extract, nil)
			if err != nil {
				return err
			}
			if _, err := h.Apply(ctx, cmd.Name, cmd); err != nil {
				return err
			}
		}
		params.Incoming = remoteIncoming
	}
	exe, err := p.l.executable()
	if err != nil {
		return err
	}
	sums := st.(*state).sums
	if sums["binary"] != exe.sum {
		f, err := os.Open(p.l.binary)
		if err != nil {
			return err
		}
		err = h.Upload(ctx, "upload gpukit", ssh.File{Path: remoteBinary, Mode: 0o755, Content: f, Sudo: true})
		f.Close()
		if err != nil {
			return err
		}
		params.Restart = true
	}
	// A dry-run makes no certificate: it plans the upload of one.
	cert, key, ok := existingCertificate(b.Dir, h.Machine.NodeIP())
	if !ok && !h.DryRun() {
		if cert, key, err = ServerCertificate(b.Dir, h.Machine.NodeIP()); err != nil {
			return err
		}
	}
	unit := p.l.unit()
	for _, u := range []struct {
		what, path, sum string
		b               []byte
		mode            os.FileMode
	}{
		{"cert", remoteCert, sum(cert), cert, 0o644}, {"key", remoteKey, sum(key), key, 0o600}, {"unit", remoteUnit, sum([]byte(unit)), []byte(unit), 0o644},
	} {
		if sums[u.what] == u.sum {
			continue
		}
		if err := h.Upload(ctx, "upload the bundle service's "+u.what, ssh.File{Path: u.path, Mode: u.mode, Content: bytes.NewReader(u.b), Sudo: true}); err != nil {
			return err
		}
		params.Restart = true
	}
	cmd, err := scripts.BundleHost(params, remove)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

// partBytes bounds an upload's part (a single bigger file is a part alone).
const partBytes = 256 << 20

// inParts cuts files, in order, into runs of at most max bytes.
func inParts(files []string, size map[string]int64, max int64) [][]string {
	var out [][]string
	var cur []string
	var n int64
	for _, f := range files {
		if len(cur) > 0 && n+size[f] > max {
			out = append(out, cur)
			cur, n = nil, 0
		}
		cur = append(cur, f)
		n += size[f]
	}
	return append(out, cur)
}

// writeTar writes the bundle's files named (slash paths below dir) to w.
func writeTar(w io.Writer, dir string, files []string) error {
	tw := tar.NewWriter(w)
	for _, rel := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg}); err != nil {
			f.Close()
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

type sourcesPhase struct{ l *Layer }

func (*sourcesPhase) Name() string    { return PhaseSources }
func (*sourcesPhase) HostLocal() bool { return true }
func (*sourcesPhase) Title() string {
	return "Point apt at the bundle's repository of each host's distribution"
}

func (p *sourcesPhase) params(ctx context.Context, h *engine.Host) (scripts.BundleSourcesParams, bool, error) {
	f, err := probe.Ensure(ctx, h)
	if err != nil {
		return scripts.BundleSourcesParams{}, false, err
	}
	fam, err := f.OS.Family()
	if err != nil {
		return scripts.BundleSourcesParams{}, false, err
	}
	if fam.PackageManager != osfamily.Apt {
		return scripts.BundleSourcesParams{}, false, nil
	}
	loc, err := p.l.local()
	if err != nil {
		return scripts.BundleSourcesParams{}, false, err
	}
	_, base := p.l.inv.BundleHost()
	return scripts.BundleSourcesParams{URL: base + bundlefs.PackagesDir + "/os/" + string(fam.Family) + "/",
		Key: strings.TrimSpace(string(loc.publicKey))}, true, nil
}

func (p *sourcesPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	params, apt, err := p.params(ctx, h)
	if err != nil || !apt {
		return false, "no apt on this host: bundles hold apt repositories only", err
	}
	params.Check = true
	cmd, err := scripts.BundleSources(params)
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return false, "", err
	}
	if !strings.Contains(string(res.Stdout), "pending: ") {
		return false, "apt installs from " + params.URL, nil
	}
	return true, "", nil
}

func (p *sourcesPhase) Run(ctx context.Context, h *engine.Host) error {
	params, apt, err := p.params(ctx, h)
	if err != nil {
		return err
	}
	if !apt {
		return errors.New("no apt on this host")
	}
	cmd, err := scripts.BundleSources(params)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

// Reset phase names.
const (
	PhaseUnserve       = "reset/bundle"
	PhaseRemoveSources = "reset/bundle-sources"
)

// RemoveSources is reset/bundle-sources: the bundle's package source leaves
// the host.
func (l *Layer) RemoveSources() engine.Phase { return &removeSourcesPhase{} }

// Unserve is reset/bundle: the bundle host stops serving, and what served
// it leaves the host. Run it after every host's reset/bundle-sources.
func (l *Layer) Unserve() engine.Phase { return &unservePhase{l} }

type removeSourcesPhase struct{}

func (*removeSourcesPhase) Name() string    { return PhaseRemoveSources }
func (*removeSourcesPhase) HostLocal() bool { return true }
func (*removeSourcesPhase) Title() string   { return "Remove the bundle's package source" }

func (*removeSourcesPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	cmd, err := scripts.BundleSources(scripts.BundleSourcesParams{Remove: true, Check: true})
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return false, "", err
	}
	if !strings.Contains(string(res.Stdout), "pending: ") {
		return false, "no package source of a bundle", nil
	}
	return true, "", nil
}

func (*removeSourcesPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.BundleSources(scripts.BundleSourcesParams{Remove: true})
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

type unservePhase struct{ l *Layer }

func (*unservePhase) Name() string  { return PhaseUnserve }
func (*unservePhase) Title() string { return "Stop serving the bundle, and remove it from its host" }

func (p *unservePhase) Targets(hosts []*engine.Host) []*engine.Host {
	return (&servePhase{p.l}).Targets(hosts)
}

func (p *unservePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	st, err := p.l.state(ctx, h, false)
	if err != nil {
		return false, "", err
	}
	if st.active {
		return true, "", nil
	}
	for _, v := range st.sums {
		if v != "none" {
			return true, "", nil
		}
	}
	return false, "no bundle served from this host", nil
}

func (p *unservePhase) Run(ctx context.Context, h *engine.Host) error {
	params := p.l.hostParams(false)
	params.Remove = true
	cmd, err := scripts.BundleHost(params, nil)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

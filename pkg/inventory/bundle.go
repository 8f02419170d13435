package inventory

import (
	"encoding/json"
	"fmt"
	"net"
	gopath "path"
	"slices"
	"strconv"

	"github.com/gpukit/gpukit/pkg/bundlefs"
)

// checkBundle checks spec.bundle: a directory, a host of the inventory, two
// ports; and that nothing else names where packages, charts, images or
// Kubeflow's manifests come from, as the bundle does.
func (c *checker) checkBundle(cl *Cluster, machines []Machine) {
	b := cl.Spec.Bundle
	if b == nil {
		return
	}
	const p = "spec.bundle"
	switch {
	case b.Dir == "":
		c.errorf(p+".dir", "a bundle's directory (gpukit bundle create DIR) is required")
	case badChar(b.Dir, charsPath) != nil:
		c.errorf(p+".dir", "invalid bundle directory: %v", badChar(b.Dir, charsPath))
	case gopath.Clean(b.Dir) != b.Dir || b.Dir[0] != '/':
		c.errorf(p+".dir", "bundle directory %s is not a clean absolute path", q(b.Dir))
	}
	if !slices.ContainsFunc(machines, func(m Machine) bool { return m.Name == b.Host }) {
		c.errorf(p+".host", "%s is no host of this inventory: the bundle is served by one of its hosts", q(b.Host))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"port", b.Port}, {"registryPort", b.RegistryPort}} {
		if f.v < 1 || f.v > 65535 {
			c.errorf(p+"."+f.name, "port %d: want 1 to 65535", f.v)
		}
	}
	if b.Port == b.RegistryPort {
		c.errorf(p+".port", "port %d is the registry's too (spec.bundle.registryPort, default %d): the packages and the images need a port each", b.Port, DefaultBundleRegistryPort)
	}
	m := cl.Spec.Mirrors
	for _, f := range []struct{ name, v string }{
		{"mirrors.nvidia", m.NVIDIA}, {"mirrors.kubernetes", m.Kubernetes}, {"mirrors.docker", m.Docker}, {"mirrors.charts", m.Charts},
		{"mirrors.registry", m.Registry}, {"mirrors.registryCAFile", m.RegistryCAFile},
		{"kubeflow.manifests", cl.Spec.Kubeflow.Manifests}, {"kubeflow.remoteBases", cl.Spec.Kubeflow.RemoteBases},
	} {
		if f.v != "" {
			c.errorf("spec."+f.name, "spec.bundle serves it: leave it unset")
		}
	}
	if m.RegistryLogin != nil {
		c.errorf("spec.mirrors.registryLogin", "spec.bundle serves the images without a login: leave it unset")
	}
}

// useBundle points every source of the run at the bundle (ReadSite): the
// package mirrors at its host's repositories, pinned to the bundle's key;
// the registry mirror at its host, trusting the bundle's CA; the charts and
// Kubeflow's manifests at the bundle's directory on this machine. It
// refuses a bundle that is not complete.
func (inv *Inventory) useBundle(readFile func(string) ([]byte, error)) error {
	s := &inv.Cluster.Spec
	b := s.Bundle
	raw, err := readFile(b.Dir + "/" + bundlefs.ManifestFile)
	if err != nil {
		return fmt.Errorf("the bundle's manifest: %w (made by gpukit bundle create %s)", err, b.Dir)
	}
	var m bundlefs.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Kind != bundlefs.ManifestKind {
		return fmt.Errorf("%s/bundle.json is not a gpukit bundle's manifest", b.Dir)
	}
	if !m.Complete {
		return fmt.Errorf("the bundle in %s is not complete: %d artifact(s) missing (gpukit bundle create lists them)", b.Dir, len(m.Missing))
	}
	host, base := inv.BundleHost()
	base += bundlefs.PackagesDir + "/"
	s.Mirrors.NVIDIA, s.Mirrors.Kubernetes, s.Mirrors.Docker = base+"nvidia/", base+"kubernetes/", base+"docker/"
	fpr := []string{m.Fingerprint}
	s.Mirrors.SigningKeys = MirrorKeys{NVIDIA: fpr, Kubernetes: fpr, Docker: fpr}
	s.Mirrors.Registry = net.JoinHostPort(host, strconv.Itoa(b.RegistryPort))
	s.Mirrors.RegistryCAFile = b.Dir + "/" + bundlefs.RegistryCAFile
	s.Mirrors.Charts = b.Dir + "/" + bundlefs.ChartsDir
	if s.Kubeflow.Enabled {
		// The manifest says what the bundle holds: its files are not read.
		s.Kubeflow.Manifests = b.Dir + "/" + bundlefs.KubeflowManifests(s.Kubeflow.Version)
		if slices.ContainsFunc(m.Files, func(f bundlefs.File) bool { return f.Path == bundlefs.KubeflowRemoteBases }) {
			s.Kubeflow.RemoteBases = b.Dir + "/" + bundlefs.KubeflowRemoteBases
		}
	}
	return nil
}

// BundleHost is spec.bundle's host's address and the base URL of what it
// serves over HTTP (http://HOST:PORT/); "" without spec.bundle.
func (inv *Inventory) BundleHost() (host, base string) {
	b := inv.Cluster.Spec.Bundle
	if b == nil {
		return "", ""
	}
	for _, m := range inv.Machines {
		if m.Name == b.Host {
			host = m.NodeIP()
		}
	}
	return host, "http://" + net.JoinHostPort(host, strconv.Itoa(b.Port)) + "/"
}

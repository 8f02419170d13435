package inventory

import (
	"fmt"
	"net/url"
	gopath "path"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/manifests"
)

// checkAddons checks ingress, monitoring, storage and Kubeflow.
func (c *checker) checkAddons(cl *Cluster, ms []Machine) {
	a := &cl.Spec.Addons
	const p = "spec.addons"

	// Every value that is written is checked, used or not: turning a
	// feature on later must not bring unchecked text into a script.
	switch d := a.Ingress.Domain; {
	case d == "":
		if *a.Ingress.Enabled {
			c.warnNoDomain(cl, ms)
		}
	case badChar(d, charsDomain) != nil:
		c.errorf(p+".ingress.domain", "invalid domain: %v", badChar(d, charsDomain))
	case !isDNSName(d):
		c.errorf(p+".ingress.domain", "invalid domain %s; expected a lowercase DNS name such as gpu.example.com", q(d))
	}
	if !*a.Ingress.Enabled {
		for i, h := range cl.Spec.Hosts {
			if hasRole(h.Roles, RoleIngress) {
				c.warnf(fmt.Sprintf("spec.hosts[%d].roles", i), "host has role ingress but addons.ingress.enabled is false")
				break
			}
		}
	}

	s := &a.Storage
	switch s.Type {
	case StorageLocalPath, StorageNone:
		if s.NFS != nil {
			c.checkNFSValues(p+".storage.nfs", s.NFS)
			c.warnf(p+".storage.nfs", "nfs is ignored: storage type is %s", s.Type)
		}
	case StorageNFS:
		c.checkNFS(p+".storage", s.NFS)
	default:
		c.errorf(p+".storage.type", "unknown storage type %s; expected local-path, nfs or none", q(s.Type))
	}

	k := &cl.Spec.Kubeflow
	if !slices.Contains(KubeflowVersions(), k.Version) {
		hint := ""
		if slices.Contains(KubeflowVersions(), "v"+k.Version) {
			hint = fmt.Sprintf(" (did you mean %s?)", q("v"+k.Version))
		}
		c.errorf("spec.kubeflow.version", "unknown Kubeflow version %s%s; expected one of %s", q(k.Version), hint, strings.Join(KubeflowVersions(), ", "))
	}
	for _, f := range []struct{ field, v string }{{"manifests", k.Manifests}, {"remoteBases", k.RemoteBases}} {
		if f.v == "" {
			continue
		}
		if err := badChar(f.v, charsPath); err != nil {
			c.errorf("spec.kubeflow."+f.field, "invalid path: %v", err)
		} else if gopath.Clean(f.v) != f.v || !strings.HasPrefix(f.v, "/") {
			c.errorf("spec.kubeflow."+f.field, "%s is not a clean absolute path on the machine running gpukit", q(f.v))
		}
	}
	if k.Enabled {
		if cl.Spec.Orchestrator == Swarm {
			c.errorf("spec.kubeflow.enabled", "Kubeflow needs kubernetes; the orchestrator is swarm")
		}
		if s.Type == StorageNone {
			c.errorf("spec.kubeflow.enabled", "Kubeflow needs a default StorageClass; addons.storage.type is none")
		}
	}
}

// warnNoDomain explains why no default ingress domain exists, pointing at
// the host whose address would have named it.
func (c *checker) warnNoDomain(cl *Cluster, ms []Machine) {
	const path = "spec.addons.ingress.domain"
	m := ingressHost(cl.Spec.Orchestrator, ms)
	if m == nil {
		c.warnf(path, "no ingress domain and no ingress, control-plane or manager host to derive one from; set addons.ingress.domain")
		return
	}
	i := slices.IndexFunc(ms, func(x Machine) bool { return x.Name == m.Name })
	pos := c.at(fmt.Sprintf("spec.hosts[%d].address", c.sources[i].entry))
	c.warns = append(c.warns, Issue{Pos: pos, Path: path, Message: fmt.Sprintf(
		"no default ingress domain: <address>%s needs an IPv4 address, but %s has address %s; set addons.ingress.domain",
		DefaultIngressDomainSuffix, m.Name, m.Address)})
}

func (c *checker) checkNFS(path string, n *NFS) {
	if n == nil {
		c.errorf(path+".type", "storage type nfs requires nfs.server and nfs.path")
		return
	}
	c.checkNFSValues(path+".nfs", n)
}

// checkNFSValues checks the NFS values that are written.
func (c *checker) checkNFSValues(path string, n *NFS) {
	if n.Server != "" {
		if err := checkAddress(n.Server); err != nil {
			c.errorf(path+".server", "invalid NFS server: %v", err)
		}
	}
	if n.Path != "" {
		if err := checkPath(n.Path); err != nil {
			c.errorf(path+".path", "invalid NFS path: %v", err)
		} else if !strings.HasPrefix(n.Path, "/") {
			c.errorf(path+".path", "NFS path %s must be absolute", q(n.Path))
		} else if clean := gopath.Clean(n.Path); clean != n.Path {
			c.errorf(path+".path", "NFS path %s is not a clean absolute path (no .., . or //, no trailing /); write %s", q(n.Path), q(clean))
		}
	}
}

// checkMirrors checks the package, chart and image sources. They end up in
// apt/dnf source files and helm/containerd configuration on every host.
func (c *checker) checkMirrors(m *Mirrors) {
	const p = "spec.mirrors"
	for _, f := range []struct{ name, v string }{
		{"nvidia", m.NVIDIA}, {"kubernetes", m.Kubernetes}, {"docker", m.Docker}, {"charts", m.Charts},
	} {
		if f.v == "" {
			continue
		}
		if dir, ok := chartsDir(f.v); ok && f.name == "charts" {
			// gpukit loads charts itself: a directory on this machine
			// (chart archives as `helm pull` saves them) serves too.
			if err := badChar(dir, charsPath); err != nil {
				c.errorf(p+".charts", "invalid charts directory: %v", err)
			} else if gopath.Clean(dir) != dir || !strings.HasPrefix(dir, "/") {
				c.errorf(p+".charts", "charts directory %s is not a clean absolute path", q(dir))
			}
			continue
		}
		if ref, ok := strings.CutPrefix(f.v, "oci://"); ok && f.name == "charts" {
			// Helm's registry client pulls NAME:VERSION below it, over HTTPS.
			if strings.ContainsRune(ref, '@') {
				c.errorf(p+".charts", "invalid chart registry %s: credentials belong in spec.mirrors.registryLogin (same host as spec.mirrors.registry) or `helm registry login`", q(withoutUserinfo(f.v)))
			} else if err := checkRegistry(ref); err != nil {
				c.errorf(p+".charts", "invalid chart registry: %v", err)
			}
			continue
		}
		switch err := checkMirrorURL(f.v); {
		case err != nil:
			c.errorf(p+"."+f.name, "invalid mirror: %v", err)
		case !strings.HasPrefix(f.v, "http://"):
		case f.name == "charts":
			// A chart becomes cluster-admin's objects: nothing on the path
			// may change it, and no signature covers it.
			c.errorf(p+".charts", "chart mirror %s is plain HTTP: charts are fetched over https only (or from a directory on this machine: /path or file:///path)", q(f.v))
		default:
			c.warnf(p+"."+f.name, "mirror %s is plain HTTP: anyone on the path can see what the hosts install (the packages are still checked against the repository's pinned signing key)", q(f.v))
		}
	}
	for _, f := range []struct {
		name, mirror string
		fprs         []string
	}{
		{"nvidia", m.NVIDIA, m.SigningKeys.NVIDIA}, {"kubernetes", m.Kubernetes, m.SigningKeys.Kubernetes}, {"docker", m.Docker, m.SigningKeys.Docker},
	} {
		kp := p + ".signingKeys." + f.name
		if len(f.fprs) > 0 && f.mirror == "" {
			c.errorf(kp, "signing keys for spec.mirrors.%s, which is not set: the upstream repository is checked against gpukit's own pinned key", f.name)
			continue
		}
		for i, fpr := range f.fprs {
			if err := manifests.CheckFingerprint(NormalizeFingerprint(fpr)); err != nil {
				c.errorf(fmt.Sprintf("%s[%d]", kp, i), "signing key %s is not a full fingerprint: want the 40 hex digits (v4 key; 64 for v5/v6) that gpg --show-keys prints; a short key ID can be forged", q(fpr))
			}
		}
	}
	if r := m.Registry; r != "" {
		if s, _, ok := strings.Cut(r, "://"); ok && s != "http" {
			c.errorf(p+".registry", "invalid registry mirror: %s: expected host[:port][/path] (HTTPS), or http://host[:port][/path] for a plain-HTTP one", q(r))
		} else if err := checkRegistry(strings.TrimPrefix(r, "http://")); err != nil {
			c.errorf(p+".registry", "invalid registry mirror: %v", err)
		} else if ok {
			c.warnf(p+".registry", "registry mirror %s is plain HTTP: the images the nodes pull can be changed on the path (pin them by digest, or serve the mirror over HTTPS)", q(r))
		}
	}
}

// chartsDir reads a local charts directory: /path or file:///path.
func chartsDir(s string) (string, bool) {
	if d, ok := strings.CutPrefix(s, "file://"); ok {
		return d, true
	}
	return s, strings.HasPrefix(s, "/")
}

// checkMirrorURL accepts an http(s) base URL without credentials, query or
// fragment: credentials would land in logs and files on every host.
func checkMirrorURL(s string) error {
	if strings.ContainsRune(s, '@') {
		return fmt.Errorf("%s contains credentials (user@); configure them on the mirror side or in the package manager", q(withoutUserinfo(s)))
	}
	if err := badChar(s, charsURL); err != nil {
		return err
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%s is not an http(s) URL such as https://mirror.example.com/nvidia", q(s))
	}
	if host := u.Hostname(); checkAddress(host) != nil {
		return fmt.Errorf("%s: host %s is neither an IP address nor a DNS name", q(s), q(host))
	}
	if port := u.Port(); port != "" && !validPortText(port) {
		return fmt.Errorf("%s: port %s is out of range 1-65535", q(s), q(port))
	}
	return nil
}

// checkRegistry accepts a container registry as host[:port][/path].
func checkRegistry(s string) error {
	if strings.Contains(s, "://") {
		return fmt.Errorf("%s: a registry is host[:port][/path] without a scheme", q(s))
	}
	if err := badChar(s, charsRegistry); err != nil {
		return err
	}
	hostPort, path, _ := strings.Cut(s, "/")
	host, port, hasPort := strings.Cut(hostPort, ":")
	if checkAddress(host) != nil || strings.Contains(host, ":") {
		return fmt.Errorf("%s: expected host[:port][/path], e.g. registry.example.com:5000/mirror", q(s))
	}
	if hasPort && !validPortText(port) {
		return fmt.Errorf("%s: port %s is out of range 1-65535", q(s), q(port))
	}
	for _, seg := range strings.Split(path, "/") {
		if path != "" && (seg == "" || seg != strings.ToLower(seg)) {
			return fmt.Errorf("%s: path segments must be non-empty and lowercase", q(s))
		}
	}
	return nil
}

func validPortText(s string) bool {
	if !isDecimal(s) || len(s) > 5 {
		return false
	}
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n >= 1 && n <= 65535
}

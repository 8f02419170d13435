package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/hostproxy"
	"github.com/gpukit/gpukit/test/lab"
)

// The bridge's ports a lab site's hosts fetch from: the package repositories
// (Kubernetes', Docker's, the NVIDIA stand-ins), Debian's mirror, the image
// registry.
var mirrorPorts = map[int]string{8080: "package repositories", 3143: "Debian mirror", 5000: "image registry"}

// proxyProof is a run whose hosts reach their mirrors only through the lab's
// proxy: what the proxy's log held before it.
type proxyProof struct {
	proxy  lab.SiteProxy
	offset int64
}

// throughProxy makes inv's hosts a proxy-only site: spec.proxy names the
// lab's squid (and nothing past it: the cluster's own networks are gpukit's
// to add), and the hosts' direct way to the mirrors is cut, checked from a
// host.
func throughProxy(t *testing.T, l *lab.Lab, inv string) *proxyProof {
	t.Helper()
	p := l.Proxy(t)
	b, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := addUnderSpec(string(b), "proxy:", "  http: "+p.URL)
	if !ok {
		t.Fatalf("no spec: in %s", inv)
	}
	if err := os.WriteFile(inv, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var ports []int
	for port := range mirrorPorts {
		ports = append(ports, port)
	}
	l.CutOff(t, ports...)
	for port, what := range mirrorPorts {
		probe := fmt.Sprintf("timeout 5 bash -c '</dev/tcp/%s/%d' 2>/dev/null && echo open || echo closed", l.Bridge, port)
		if got := l.SSH(t, l.Hosts[0].Name, probe); got != "closed" {
			t.Fatalf("%s still reaches the %s (%s:%d) directly: %s", l.Hosts[0].Name, what, l.Bridge, port, got)
		}
	}
	var offset int64
	if st, err := os.Stat(p.AccessLog); err == nil {
		offset = st.Size()
	}
	return &proxyProof{proxy: p, offset: offset}
}

// addUnderSpec inserts key (and its child lines) as spec's first field, at
// the indentation of spec's fields.
func addUnderSpec(doc, key string, children ...string) (string, bool) {
	lines := strings.Split(doc, "\n")
	for i, line := range lines {
		if line != "spec:" || i+1 >= len(lines) {
			continue
		}
		next := lines[i+1]
		indent := next[:len(next)-len(strings.TrimLeft(next, " "))]
		add := []string{indent + key}
		for _, c := range children {
			add = append(add, indent+indent+strings.TrimLeft(c, " "))
		}
		out := append(append(append([]string{}, lines[:i+1]...), add...), lines[i+1:]...)
		return strings.Join(out, "\n"), true
	}
	return doc, false
}

// check proves the run went through the proxy: every host's requests to
// each mirror are in its log, none to the API (the kubelet reaches the
// control plane directly: gpukit's noProxy); containerd and the kubelet
// carry the proxy (the test's second init showed host/proxy changes nothing
// again); reset takes it all back, and again changes nothing.
func (p *proxyProof) check(t *testing.T, l *lab.Lab, inv string) {
	t.Helper()
	b, err := os.ReadFile(p.proxy.AccessLog)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) < p.offset {
		p.offset = 0 // rotated
	}
	type key struct {
		host string
		port int
	}
	seen := map[key]int{}
	addr := map[string]string{}
	for _, h := range l.Hosts {
		addr[h.Address] = h.Name
	}
	api := 0
	for line := range strings.Lines(string(b[p.offset:])) {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		host, ok := addr[f[2]]
		if !ok {
			continue
		}
		if strings.Contains(f[6], ":6443") {
			api++
		}
		for port := range mirrorPorts {
			if strings.Contains(f[6], fmt.Sprintf("%s:%d", l.Bridge, port)) {
				seen[key{host, port}]++
			}
		}
	}
	for _, h := range l.Hosts {
		var counts []string
		for port, what := range mirrorPorts {
			n := seen[key{h.Name, port}]
			counts = append(counts, fmt.Sprintf("%s %d", what, n))
			if n == 0 {
				t.Errorf("%s: no request to the %s (%s:%d) in the proxy's log", h.Name, what, l.Bridge, port)
			}
		}
		t.Logf("%s through the proxy: %s requests", h.Name, strings.Join(counts, ", "))
	}
	if api > 0 {
		t.Errorf("%d requests to the API server went through the proxy: the kubelet's NO_PROXY lacks the control plane", api)
	}
	host := l.Hosts[len(l.Hosts)-1].Name
	for _, unit := range []string{"containerd", "kubelet"} {
		if env := l.SSH(t, host, "systemctl show -p Environment "+unit); !strings.Contains(env, "HTTPS_PROXY="+p.proxy.URL) || !strings.Contains(env, "NO_PROXY=") {
			t.Errorf("%s: %s's environment lacks the proxy: %s", host, unit, env)
		}
	}
	r := runInit(t, "reset", "-i", inv, "--hosts", host, "--yes", "--only-phases", hostproxy.PhaseRemove)
	if r.code != cli.ExitOK || r.counts.Changed != 1 {
		t.Fatalf("reset/proxy: exit %d %+v, want 1 changed\n%s", r.code, r.counts, r.out)
	}
	files := "/etc/gpukit/proxy.env /etc/apt/apt.conf.d/90gpukit-proxy /etc/systemd/system/containerd.service.d/90-gpukit-proxy.conf /etc/systemd/system/kubelet.service.d/90-gpukit-proxy.conf"
	if left := l.SSH(t, host, "ls "+files+" 2>/dev/null || true"); left != "" {
		t.Errorf("%s: reset left %s", host, left)
	}
	if env := l.SSH(t, host, "systemctl show -p Environment containerd"); strings.Contains(env, "PROXY") {
		t.Errorf("%s: containerd still has the proxy after reset: %s", host, env)
	}
	if r := runInit(t, "reset", "-i", inv, "--hosts", host, "--yes", "--only-phases", hostproxy.PhaseRemove); r.code != cli.ExitOK || r.counts.Changed != 0 {
		t.Errorf("reset/proxy again: exit %d %+v, want 0 changed\n%s", r.code, r.counts, r.out)
	}
}

// usePrivateRegistry points inv at the lab's TLS registry (the same images,
// a CA no host trusts, a login whose password comes from a file) and cuts
// the lab's hosts off the plain one: every image the cluster runs comes
// through spec.mirrors.registryCAFile and registryLogin, or init fails. The
// pod network's chart comes from it too (spec.mirrors.charts: oci://...).
func usePrivateRegistry(t *testing.T, l *lab.Lab, inv string) *lab.SecureRegistry {
	t.Helper()
	sec := l.SecureRegistry(t)
	b, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	plain := "registry: http://" + l.Bridge + ":5000/"
	text := string(b)
	i := strings.Index(text, plain)
	if i < 0 {
		t.Fatalf("no %q in %s", plain, inv)
	}
	indent := text[strings.LastIndexByte(text[:i], '\n')+1 : i]
	text = strings.Replace(text, plain, "registry: "+sec.Address+"/", 1)
	eol := i + strings.IndexByte(text[i:], '\n')
	text = text[:eol+1] + indent + "registryCAFile: " + sec.CAFile + "\n" +
		indent + "registryLogin: {username: " + sec.Username + ", password: {file: " + sec.PasswordFile + "}}\n" + text[eol+1:]
	// The charts from the same registry, as `helm push` stores them: the
	// pod network's chart (the only one these variants install).
	if m := regexp.MustCompile(`(?m)^(\s+charts: )(/\S+)$`).FindStringSubmatch(text); m != nil {
		archive := filepath.Join(m[2], "flannel-"+kubeadm.FlannelChart.Version+".tgz")
		base := sec.PushChart(t, "charts", archive)
		text = strings.Replace(text, m[0], m[1]+base, 1)
		t.Logf("the charts from %s (flannel %s pushed there)", base, kubeadm.FlannelChart.Version)
	}
	if err := os.WriteFile(inv, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l.CutOff(t, 5000)
	return &sec
}

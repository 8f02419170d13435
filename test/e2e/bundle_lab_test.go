package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/bundle"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/bundlehost"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// demoSite is the demo's site in a fresh lab: 3 Kubernetes hosts, lab-2 and
// lab-3 with simulated H100s (lab-3 without its kernel's headers when
// asked), the lab's stand-in repositories, registry and the chart archives
// as the inventory's mirrors; with platform, monitoring on (the lab's
// monitoring: Prometheus and the statsd exporter). It returns the lab, the site and the
// inventory's path.
func demoSite(t *testing.T, noHeaders, platform bool) (*lab.Lab, cluster.Site, string) {
	t.Helper()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l := lab.Start(t, lab.Options{Hosts: 3, Kube: true})
	repo := gpusim.Simulate(t, l, map[string]gpusim.Hardware{
		"lab-2": {Capture: withUUID(t, h100, "GPU-5a1e0002-6c2d-4b1e-9f00-0000000000b2")},
		"lab-3": {Capture: withUUID(t, h100, "GPU-5a1e0003-6c2d-4b1e-9f00-0000000000b3"), NoKernelHeaders: noHeaders},
	})
	dir := t.TempDir()
	gpuInv, err := repo.Inventory(l, dir)
	if err != nil {
		t.Fatal(err)
	}
	site := cluster.NewSite(t, l, "")
	if platform {
		// monitoring on, its images built from Go modules (Prometheus, its
		// operator and config reloader, the statsd exporter)
		site = site.WithPlatform(t, l, kubeflow.MonitoringChart, kubeflow.StatsdImage)
	}
	inv := filepath.Join(dir, "kubernetes.yaml")
	if err := site.WriteInventory(gpuInv, inv, cluster.LabKubernetes); err != nil {
		t.Fatal(err)
	}
	return l, site, inv
}

// thanosStandIn pushes a labelled stand-in of the Thanos image the
// monitoring chart names as its operator's default base image
// (--thanos-default-base-image): bundle list names it, the lab builds no
// Thanos, and this cluster runs none (no ThanosRuler, no sidecar).
func thanosStandIn(t *testing.T, l *lab.Lab, inv string) {
	t.Helper()
	code, stdout, stderr := run(t, "bundle", "list", "-i", inv, "-o", "json")
	var list struct{ Artifacts []bundle.Artifact }
	lastJSON(t, stdout, &list)
	if code != cli.ExitOK {
		t.Fatalf("bundle list: exit %d\n%s", code, stderr)
	}
	for _, a := range list.Artifacts {
		if a.Kind == bundle.Image && strings.HasPrefix(a.Name, "quay.io/thanos/thanos:") {
			pause := filepath.Join(cluster.Build(t, ""), "pause")
			cluster.Mirror(t, l, cluster.Image{Ref: a.Name, Upstream: a.Name, Files: map[string]string{"/pause": pause}, Entrypoint: []string{"/pause"}})
			return
		}
	}
	t.Fatalf("bundle list names no Thanos image: the stand-in is no longer needed")
}

// offlineInventory is inv with spec.bundle (dir, served by lab-1) instead
// of its mirrors, written beside it.
func offlineInventory(t *testing.T, inv, bundleDir string) string {
	t.Helper()
	raw, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	offline := filepath.Join(filepath.Dir(inv), "offline.yaml")
	doc, ok := addUnderSpec(withoutMirrors(string(raw)), "bundle:", "dir: "+bundleDir, "host: lab-1")
	if !ok {
		t.Fatalf("no spec in %s", inv)
	}
	if err := os.WriteFile(offline, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return offline
}

// airGap cuts the lab's hosts off every source but each other (the lab's
// package repository, Debian's mirror, the registry), and takes their own
// package sources away, as at an air-gapped site.
func airGap(t *testing.T, l *lab.Lab) {
	t.Helper()
	l.CutOff(t, 8080, 3143, 5000)
	for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
		l.SSH(t, h, "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*")
	}
}

// buildGpukit builds gpukit (for a bundle host: the in-process CLI has no
// executable of its own to copy).
func buildGpukit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpukit")
	if b, err := exec.Command("go", "build", "-o", bin, "github.com/gpukit/gpukit/cmd/gpukit").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// bundleCreated is bundle create's final object (-o json).
type bundleCreated struct {
	Complete    bool     `json:"complete"`
	Missing     []string `json:"missing"`
	Fingerprint string   `json:"fingerprint"`
	Kinds       []struct {
		Kind    bundle.Kind `json:"kind"`
		Files   int         `json:"files"`
		Bytes   int64       `json:"bytes"`
		Fetched int         `json:"fetched"`
		Seconds float64     `json:"seconds"`
	} `json:"kinds"`
	Seconds float64 `json:"seconds"`
}

// lastJSON decodes the last line of a -o json run.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("the last line is not the result: %v\n%s", err, out)
	}
}

// The demo's site (3 Kubernetes hosts, 2 with simulated H100s, the lab's
// stand-in NVIDIA and Kubernetes repositories, its registry and the chart
// archives as the site's mirrors): bundle list over real SSH names what
// init installs; bundle create gathers it from those sources and Debian's
// archive (the lab's mirror of it), complete; a second create fetches
// nothing; --verify passes, and finds a file changed.
func TestLabBundle(t *testing.T) {
	cluster.Require(t)
	lab.Require(t)
	// Not parallel, as TestLabKubernetes: a kubeadm cluster with its
	// monitoring beside the parallel lab tests would starve their hosts of
	// CPU on a 2-core machine.
	l, site, inv := demoSite(t, true, true)
	dir := filepath.Dir(inv)
	kernel := l.SSH(t, "lab-3", "uname -r")
	thanosStandIn(t, l, inv)

	t.Run("list", func(t *testing.T) {
		code, out, errOut := run(t, "bundle", "list", "-i", inv, "-o", "plain")
		// lab-3 has no headers of its kernel (this machine's), which no
		// Debian archive has: listed all the same, as init would install them.
		for _, want := range []string{"linux-headers-" + kernel, "kubeadm", "containerd.io", "nvidia-open",
			"nvidia-container-toolkit", "registry.k8s.io/kube-apiserver:v" + site.Version, "ghcr.io/flannel-io/flannel:", "flannel v"} {
			if !strings.Contains(out, want) {
				t.Errorf("bundle list names no %s", want)
			}
		}
		if code != cli.ExitOK || strings.Contains(out, "\nunknown\n") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if n := strings.Count(out, "linux-headers-"); n != 1 {
			t.Errorf("%d headers' packages listed; lab-2 has its kernel's headers: want lab-3's only\n%s", n, out)
		}
	})

	out := filepath.Join(t.TempDir(), "bundle")
	mirror := l.DebianMirror(t)
	create := func(t *testing.T) bundleCreated {
		t.Helper()
		began := time.Now()
		code, stdout, stderr := run(t, "bundle", "create", "-i", inv, out, "-o", "json",
			"--os-mirror", "debian-12="+mirror.Debian+"/,"+mirror.Security+"/")
		var res bundleCreated
		lastJSON(t, stdout, &res)
		t.Logf("bundle create: exit %d in %s", code, time.Since(began).Round(100*time.Millisecond))
		for _, k := range res.Kinds {
			t.Logf("  %-12s %5d files %8.1f MiB  fetched %d in %.1f s", k.Kind, k.Files, float64(k.Bytes)/(1<<20), k.Fetched, k.Seconds)
		}
		if len(res.Missing) > 0 {
			t.Logf("missing:\n  %s", strings.Join(res.Missing, "\n  "))
		}
		if (code == cli.ExitOK) != res.Complete {
			t.Errorf("exit %d for a bundle complete=%v\n%s", code, res.Complete, stderr)
		}
		return res
	}
	fetched := func(res bundleCreated) map[bundle.Kind]int {
		out := map[bundle.Kind]int{}
		for _, k := range res.Kinds {
			if k.Fetched > 0 {
				out[k.Kind] = k.Fetched
			}
		}
		return out
	}

	t.Run("create names what cannot be had", func(t *testing.T) {
		res := create(t)
		// The headers of this machine's kernel, which lab-3 runs (the lab's
		// hosts share it), are in no Debian archive.
		if res.Complete || len(res.Missing) != 1 || !strings.Contains(res.Missing[0], "linux-headers-"+kernel) {
			t.Fatalf("want exactly lab-3's kernel headers missing: %+v", res)
		}
		// kubeadm's 7 images, flannel's 2, the monitoring's 4 and Thanos'
		// stand-in, the statsd exporter's
		if got := fetched(res); got[bundle.Package] < 10 || got[bundle.Chart] != 2 || got[bundle.Image] != 14 {
			t.Errorf("fetched %v: want the packages with their dependencies, flannel's and kube-prometheus-stack's charts, 14 images", got)
		}
	})

	t.Run("create completes, then fetches nothing", func(t *testing.T) {
		// lab-3 gets its headers (the simulator's stand-in, as lab-2 has):
		// nothing is missing now.
		l.SSH(t, "lab-3", "mkdir -p /lib/modules/$(uname -r)/build")
		res := create(t)
		if !res.Complete || len(fetched(res)) != 0 {
			t.Fatalf("second create: complete %v, fetched %v, missing %v", res.Complete, fetched(res), res.Missing)
		}
		before, err := os.ReadFile(filepath.Join(out, bundlefs.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		res = create(t)
		after, _ := os.ReadFile(filepath.Join(out, bundlefs.ManifestFile))
		if !res.Complete || len(fetched(res)) != 0 || string(before) != string(after) {
			t.Errorf("third create: complete %v, fetched %v, manifest unchanged %v", res.Complete, fetched(res), string(before) == string(after))
		}
		var total int64
		for _, k := range res.Kinds {
			total += k.Bytes
		}
		t.Logf("the demo site's bundle: %.1f MiB", float64(total)/(1<<20))
	})

	t.Run("verify", func(t *testing.T) {
		if code, stdout, stderr := run(t, "bundle", "create", "--verify", out); code != cli.ExitOK || !strings.Contains(stdout, "complete") {
			t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
		m, err := bundlefs.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		var deb string
		for _, f := range m.Files {
			if strings.HasSuffix(f.Path, ".deb") {
				deb = f.Path
				break
			}
		}
		if err := os.WriteFile(filepath.Join(out, deb), []byte("tampered"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, stdout, _ := run(t, "bundle", "create", "--verify", out); code == cli.ExitOK || !strings.Contains(stdout, deb+": 8 bytes") {
			t.Errorf("verify of a changed file: exit %d\n%s", code, stdout)
		}
		// create mends it: that one file fetched again
		if res := create(t); !res.Complete || fetched(res)[bundle.Package] != 1 {
			t.Errorf("create after the change: complete %v, fetched %v", res.Complete, fetched(res))
		}
		if code, stdout, stderr := run(t, "bundle", "create", "--verify", out); code != cli.ExitOK {
			t.Fatalf("verify after create mended it: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("init from the bundle only", func(t *testing.T) {
		// The hosts reach nothing but each other: the lab's package
		// repository, Debian's mirror and the registry are cut off, and
		// the hosts have no package sources of their own, as at an
		// air-gapped site. lab-1 serves the bundle.
		airGap(t, l)
		offline := offlineInventory(t, inv, out)
		bin := buildGpukit(t)
		kubeconfig := filepath.Join(dir, "offline.kubeconfig")
		creds := filepath.Join(dir, "offline.credentials")
		began := time.Now()
		r := runInit(t, "init", "-i", offline, "--gpukit-binary", bin, "--kubeconfig-out", kubeconfig, "--credentials-out", creds)
		if r.code != cli.ExitOK {
			t.Fatalf("init from the bundle: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("init from the bundle on 3 hosts: %s (bundle/serve %s, bundle/sources %s)", time.Since(began).Round(100*time.Millisecond),
			phaseTime(r, bundlehost.PhaseServe), phaseTime(r, bundlehost.PhaseSources))
		nodes := kubectlIn(t, kubeconfig, "", "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if strings.Count(nodes, " True") != 3 {
			t.Errorf("nodes:\n%s", nodes)
		}
		// The platform too: Prometheus and the statsd exporter run, their
		// chart from the bundle's directory, their images from its registry.
		// (The operator makes Prometheus' StatefulSet after the release is in.)
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(kubectlIn(t, kubeconfig, "", "-n", kubeflow.MonitoringNamespace, "get", "statefulsets", "-o", "name"), "prometheus-") {
			if time.Now().After(deadline) {
				t.Fatalf("no Prometheus StatefulSet in 3 minutes:\n%s", kubectlIn(t, kubeconfig, "", "-n", kubeflow.MonitoringNamespace, "get", "all,events"))
			}
			time.Sleep(2 * time.Second)
		}
		for _, w := range []string{"statefulset/prometheus-kube-prometheus-stack-prometheus", "deployment/statsd-exporter"} {
			kubectlIn(t, kubeconfig, "", "-n", kubeflow.MonitoringNamespace, "rollout", "status", w, "--timeout=180s")
		}
		// Every image the nodes run came through the bundle's registry.
		if got := l.SSH(t, "lab-2", "grep -c . /etc/containerd/certs.d/registry.k8s.io/hosts.toml >/dev/null && crictl images -o json | grep -c '\"registry.k8s.io/pause'"); got == "0" {
			t.Errorf("lab-2 pulled no pause image: %s", got)
		}
		r = runInit(t, "init", "-i", offline, "--gpukit-binary", bin, "--kubeconfig-out", kubeconfig, "--credentials-out", creds)
		if r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("second init from the bundle: exit %d, %+v\n%s", r.code, r.counts, r.out)
		}

		// The bundle survives its host's reboot.
		l.Reboot(t, "lab-1")
		if got := l.SSHWithin(t, "lab-1", "for i in $(seq 1 60); do systemctl is-active -q gpukit-bundle.service && break; sleep 0.5; done; systemctl is-active gpukit-bundle.service", time.Minute); got != "active" {
			t.Errorf("gpukit-bundle.service after lab-1's reboot: %s", got)
		}

		// reset takes the bundle back: every host's source, then the
		// bundle host's service and files; a second reset changes nothing.
		only := []string{"--yes", "--only-phases", bundlehost.PhaseRemoveSources + "," + bundlehost.PhaseUnserve}
		r = runInit(t, append([]string{"reset", "-i", offline}, only...)...)
		if r.code != cli.ExitOK || r.counts.Changed != 3 {
			t.Fatalf("reset of the bundle: exit %d, %+v\n%s", r.code, r.counts, r.out)
		}
		if got := l.SSH(t, "lab-1", "systemctl is-active gpukit-bundle.service || true; "+
			"for f in /var/lib/gpukit/bundle /usr/local/lib/gpukit/gpukit /etc/systemd/system/gpukit-bundle.service /etc/gpukit/bundle/registry-key.pem "+
			"/etc/apt/sources.list.d/gpukit-bundle.list; do if test -e $f; then echo left: $f; fi; done"); got != "inactive" {
			t.Errorf("lab-1 after reset: %s", got)
		}
		if got := l.SSH(t, "lab-2", "ls /etc/apt/sources.list.d/ /usr/share/keyrings/ | grep -c gpukit-bundle || true"); got != "0" {
			t.Errorf("lab-2 keeps the bundle's source: %s", got)
		}
		if r = runInit(t, append([]string{"reset", "-i", offline}, only...)...); r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("second reset of the bundle: exit %d, %+v\n%s", r.code, r.counts, r.out)
		}
	})
}

// withoutMirrors is an inventory's text without its spec.mirrors block
// (at whatever indent it is written).
func withoutMirrors(doc string) string {
	var out []string
	indent := -1 // of the mirrors: key being skipped
	for _, line := range strings.Split(doc, "\n") {
		at := len(line) - len(strings.TrimLeft(line, " "))
		if indent >= 0 && (at > indent || strings.TrimSpace(line) == "") {
			continue
		}
		indent = -1
		if strings.TrimSpace(line) == "mirrors:" {
			indent = at
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

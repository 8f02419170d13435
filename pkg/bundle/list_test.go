package bundle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/golden"
)

// hostFacts are a probed host's facts: Debian 12 or Ubuntu 22.04, with an
// H100 on the PCI bus or none.
func hostFacts(t *testing.T, os, kernel string, gpu bool) *facts.Facts {
	t.Helper()
	id, version, _ := strings.Cut(os, "-")
	out := fmt.Sprintf("os.id=%s\nos.version=%s\nkernel=%s\narch=x86_64\nhostname=h\ncpus=16\nmem.kib=65856300\nsecureboot=SecureBoot disabled\ninit=systemd\n", id, version, kernel)
	if gpu {
		out += "pci.gpu=0000:17:00.0 0x2330\n"
	}
	f, err := facts.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// load reads testdata/NAME with the chart mirror /CHARTS at the fixtures'
// chart archives.
func load(t *testing.T, name string) (*inventory.Inventory, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := fixtures.Dir(t, "charts")
	b = bytes.ReplaceAll(b, []byte("/CHARTS"), []byte(dir))
	if bytes.Contains(b, []byte("/KUBEFLOW")) {
		b = bytes.ReplaceAll(b, []byte("/KUBEFLOW"), []byte(fixtures.Dir(t, "kubeflow")))
	}
	inv, err := inventory.LoadFile(filepath.Join("testdata", name), b, inventory.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	return inv, dir
}

// listed is the list of inv's hosts, every artifact named, and its text.
func listed(t *testing.T, inv *inventory.Inventory, hosts []Host) (*List, string) {
	t.Helper()
	l, err := Compute(context.Background(), inv, hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := l.Unknown(); len(u) > 0 {
		t.Errorf("unknown: %+v", u)
	}
	var text bytes.Buffer
	if err := WriteText(&text, l); err != nil {
		t.Fatal(err)
	}
	return l, text.String()
}

// The demo's inventory: a control plane without GPUs and two H100 workers
// on Debian 12, flannel, the platform off. The golden files are the list
// in words and as JSON.
func TestDemoListGolden(t *testing.T) {
	inv, dir := load(t, "demo.yaml")
	hosts := []Host{
		{Machine: inv.Machines[0], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", false)},
		{Machine: inv.Machines[1], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", true)},
		{Machine: inv.Machines[2], Facts: hostFacts(t, "debian-12", "6.1.0-28-amd64", true)},
	}
	l, text := listed(t, inv, hosts)
	js, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for file, got := range map[string][]byte{"demo.txt": []byte(text), "demo.json": append(js, '\n')} {
		golden.Assert(t, filepath.Join("testdata", file), bytes.ReplaceAll(got, []byte(dir), []byte("/CHARTS")))
	}
	// Both kernels' headers: DKMS builds for the kernel each host runs.
	for _, k := range []string{"linux-headers-6.1.0-26-amd64", "linux-headers-6.1.0-28-amd64"} {
		if !slices.ContainsFunc(l.Of(Package), func(a Artifact) bool { return a.Name == k }) {
			t.Errorf("no %s", k)
		}
	}
}

// A swarm with the platform on: Docker's packages, and the platform's
// images by the bill's names (those the stacks run through the mirror).
func TestSwarmListGolden(t *testing.T) {
	inv, dir := load(t, "swarm.yaml")
	hosts := []Host{
		{Machine: inv.Machines[0], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", false)},
		{Machine: inv.Machines[1], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", true)},
		{Machine: inv.Machines[2], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", true)},
	}
	l, text := listed(t, inv, hosts)
	golden.Assert(t, filepath.Join("testdata", "swarm.txt"), bytes.ReplaceAll([]byte(text), []byte(dir), []byte("/CHARTS")))
	var images []string
	for _, a := range l.Of(Image) {
		images = append(images, a.Name)
	}
	if len(images) != 6 || !slices.Contains(images, "docker.io/library/traefik:v3.7.11") {
		t.Errorf("images: %v", images)
	}
}

// A host that does not answer, or whose NVIDIA stack cannot be decided,
// and a chart that cannot be had are named as unknown, with why; the rest
// is listed.
func TestUnknownArtifacts(t *testing.T) {
	inv, _ := load(t, "demo.yaml")
	inv.Cluster.Spec.Mirrors.Charts = t.TempDir() // no archives
	secure := hostFacts(t, "debian-12", "6.1.0-26-amd64", true)
	secure.SecureBoot = "SecureBoot enabled"
	hosts := []Host{
		{Machine: inv.Machines[0], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", false)},
		{Machine: inv.Machines[1], Err: errors.New("dial tcp 10.251.1.2:22: connect: no route to host")},
		{Machine: inv.Machines[2], Facts: secure},
	}
	l, err := Compute(context.Background(), inv, hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range l.Unknown() {
		got = append(got, a.Name+": "+a.Unknown)
	}
	for _, want := range []string{
		"the packages of lab-2: the host did not answer: dial tcp 10.251.1.2:22: connect: no route to host; its OS family",
		"the packages of lab-3: the NVIDIA stack: Secure Boot is on",
		"the images of chart flannel v0.28.9: ",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no unknown %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
	// lab-1's packages and kubeadm's images are still there.
	if n := len(l.Of(Image)) - 1; n != 7 {
		t.Errorf("%d images besides the unknown: want kubeadm's 7", n)
	}
	if !slices.ContainsFunc(l.Of(Package), func(a Artifact) bool { return a.Name == "kubeadm" && slices.Equal(a.Hosts, []string{"lab-1", "lab-3"}) }) {
		t.Errorf("kubeadm not listed for lab-1 and lab-3: %+v", l.Of(Package))
	}
}

// Every layer on, hosts of two OS families: every release's chart, every
// image of the charts as rendered, Kubeflow's manifests, remote bases and
// images, packages per family.
func TestFullList(t *testing.T) {
	inv, _ := load(t, "full.yaml")
	hosts := []Host{
		{Machine: inv.Machines[0], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", false)},
		{Machine: inv.Machines[1], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", true)},
		{Machine: inv.Machines[2], Facts: hostFacts(t, "ubuntu-22.04", "5.15.0-126-generic", true)},
	}
	l, text := listed(t, inv, hosts)
	got := strings.ReplaceAll(text, fixtures.Dir(t, "charts"), "/CHARTS")
	golden.AssertString(t, filepath.Join("testdata", "full.txt"), strings.ReplaceAll(got, fixtures.Dir(t, "kubeflow"), "/KUBEFLOW"))

	// kube-prometheus-stack 88.5.3's images with gpukit's values, by hand
	// from the chart's values.yaml and its subcharts' (grafana 12.11.1,
	// kube-state-metrics 8.4.0, prometheus-node-exporter 4.56.1): tags ""
	// are the chart's appVersion; the admission webhook's Deployment, the
	// CRD upgrade job, Grafana's chown init container and the kube-rbac-proxy
	// sidecars are off by default; Thanos is the operator's default base
	// image (--thanos-default-base-image).
	byHand := []string{
		"docker.io/grafana/grafana:13.2.0",
		"ghcr.io/jkroepke/kube-webhook-certgen:1.8.7",
		"quay.io/kiwigrid/k8s-sidecar:2.10.1",
		"quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1",
		"quay.io/prometheus-operator/prometheus-operator:v0.93.1",
		"quay.io/prometheus/alertmanager:v0.34.0",
		"quay.io/prometheus/node-exporter:v1.12.1-distroless",
		"quay.io/prometheus/prometheus:v3.14.0-distroless",
		"quay.io/thanos/thanos:v0.42.4",
		"registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.20.0",
	}
	var kps []string
	for _, a := range l.Of(Image) {
		if slices.Contains(a.For, "release monitoring/kube-prometheus-stack") {
			kps = append(kps, a.Name)
		}
	}
	if !slices.Equal(kps, byHand) {
		t.Errorf("kube-prometheus-stack's images:\n%s\nby hand:\n%s", strings.Join(kps, "\n"), strings.Join(byHand, "\n"))
	}

	// Kubeflow's: every image field of upstream's own build of the release
	// (kustomize 5.8.1, the fixtures' reference build) is in the list.
	ref, err := os.Open(filepath.Join(fixtures.Dir(t, "kubeflow"), "reference-builds", "26.03-example-kustomize-5.8.1-remote-bases.yaml.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	zr, err := gzip.NewReader(ref)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	listed := map[string]bool{}
	for _, a := range l.Of(Image) {
		listed[a.Name] = true
	}
	fields := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		v, ok := strings.CutPrefix(strings.TrimPrefix(line, "- "), "image: ")
		if !ok {
			continue
		}
		if strings.ContainsAny(v, "${") {
			continue // a placeholder its controller or template fills in
		}
		fields++
		full, ok := imageref.Normal(strings.Trim(v, `"'`))
		if !ok || !listed[full] {
			t.Errorf("the reference build runs image %s; the list lacks it", v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if fields < 50 {
		t.Errorf("only %d image fields in the reference build: not the release's build", fields)
	}
	t.Logf("%d images listed; the reference build has %d image fields", len(l.Of(Image)), fields)
}

// A host whose running kernel's headers are installed gets no headers'
// package (nvidia/prepare installs them only where missing).
func TestKernelHeadersOnlyWhereMissing(t *testing.T) {
	inv, _ := load(t, "demo.yaml")
	with := hostFacts(t, "debian-12", "6.1.0-28-amd64", true)
	with.KernelHeaders = true
	l, err := Compute(context.Background(), inv, []Host{
		{Machine: inv.Machines[1], Facts: hostFacts(t, "debian-12", "6.1.0-26-amd64", true)},
		{Machine: inv.Machines[2], Facts: with},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, a := range l.Of(Package) {
		if strings.HasPrefix(a.Name, "linux-headers-") {
			headers = append(headers, a.Name+" "+strings.Join(a.Hosts, ","))
		}
	}
	if !slices.Equal(headers, []string{"linux-headers-6.1.0-26-amd64 lab-2"}) {
		t.Errorf("headers listed: %q", headers)
	}
}

// An image of a registry the nodes' containerd is not pointed at the mirror
// for cannot reach them: named as unknown, with the registries that are.
func TestUnmirroredRegistry(t *testing.T) {
	inv, _ := load(t, "demo.yaml")
	b := &builder{inv: inv, index: map[string]int{}}
	b.image("registry.example.com/team/trainer:1", "a site's own")
	b.image("gcr.io/istio-release/pilot:1.28.0", "Kubeflow")
	if u := b.out[0].Unknown; !strings.Contains(u, "registry.example.com's images") || !strings.Contains(u, "gcr.io") {
		t.Errorf("unknown %q", u)
	}
	if b.out[1].Unknown != "" {
		t.Errorf("gcr.io: %q", b.out[1].Unknown)
	}
}

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// `gpukit init` with Kubernetes on three lab hosts made for kubelet (1
// control plane without GPU, 2 workers with a simulated H100 each), from an
// air-gapped site's sources only: kubeadm, kubelet and kubectl from the
// pkgs.k8s.io stand-in, containerd.io from the Docker repository stand-in
// (both built from Go modules by test/k8s), every image from the lab
// registry as registry.k8s.io's mirror (spec.mirrors.registry), Debian's
// packages through the lab's proxy. A plan changes nothing; init makes the
// cluster (kubeadm init, the workers joined with a short-lived token that
// shows nowhere), the admin kubeconfig works from this machine, the GPU
// workers' containers run through the NVIDIA runtime (the simulator's), a
// second init changes nothing, status lists the nodes; add-node joins a 4th
// host touching only it and the control plane; reset of a worker drains and
// deletes its node and cleans the host, and init joins it again.
func TestLabKubernetes(t *testing.T) {
	cluster.Require(t)
	lab.Require(t)
	// Not parallel: Go runs it before the parallel lab tests, alone in this
	// package. Kubeadm clusters beside them starved the NVIDIA tests' hosts
	// of CPU on a 2-core machine (reboots past their timeout, found by CI).
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l := lab.Start(t, lab.Options{Hosts: 4, Kube: true})
	all := []string{"lab-1", "lab-2", "lab-3", "lab-4"}
	repo := gpusim.Simulate(t, l, map[string]gpusim.Hardware{
		"lab-2": {Capture: withUUID(t, h100, "GPU-5a1e0002-6c2d-4b1e-9f00-000000000002")},
		"lab-3": {Capture: withUUID(t, h100, "GPU-5a1e0003-6c2d-4b1e-9f00-000000000003")},
		"lab-4": {Capture: withUUID(t, h100, "GPU-5a1e0004-6c2d-4b1e-9f00-000000000004")},
	})
	dir := t.TempDir()
	gpuInv, err := repo.Inventory(l, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(gpuInv)
	if err != nil {
		t.Fatal(err)
	}
	gpuInv3 := filepath.Join(dir, "gpusim-3.yaml")
	if err := os.WriteFile(gpuInv3, []byte(withoutHost(string(b), "lab-4")), 0o644); err != nil {
		t.Fatal(err)
	}
	site := cluster.NewSite(t, l, "")
	inv, inv4 := filepath.Join(dir, "kubernetes-3.yaml"), filepath.Join(dir, "kubernetes-4.yaml")
	for src, dst := range map[string]string{gpuInv3: inv, gpuInv: inv4} {
		if err := site.WriteInventory(src, dst, cluster.LabKubernetes); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, h := range all {
		l.SetRebootDelay(t, h, time.Second)
		wg.Go(func() { l.UseDebianMirror(t, h) })
	}
	wg.Wait()
	kubeconfig := filepath.Join(dir, "lab.kubeconfig")
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("plan changes nothing", func(t *testing.T) {
		r := runInit(t, "plan", "-i", inv)
		if r.code != cli.ExitOK || len(r.writeSteps()) != 0 {
			t.Fatalf("plan: exit %d, writes %v\n%s", r.code, r.writeSteps(), r.out)
		}
		joins := 0
		for _, e := range r.events {
			if e.Type == event.Planned && e.Phase == kubeadm.PhaseJoinWorkers {
				joins++
			}
		}
		if joins != 2 {
			t.Errorf("%d joins planned, want 2", joins)
		}
		if got := l.SSH(t, "lab-1", "command -v kubeadm containerd || echo none"); got != "none" {
			t.Errorf("plan installed %q", got)
		}
	})

	t.Run("init makes the cluster", func(t *testing.T) {
		start := time.Now()
		r := runInit(t, "init", "-i", inv, "--kubeconfig-out", kubeconfig)
		if r.code != cli.ExitOK || r.counts.Changed != 3 {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("first init (NVIDIA stack + Kubernetes %s) on 3 hosts: %s", site.Version, time.Since(start).Round(100*time.Millisecond))
		for _, p := range []string{kubeadm.PhasePrepare, kubeadm.PhasePackages, kubeadm.PhaseContainerd, kubeadm.PhaseInit, kubeadm.PhaseJoinWorkers} {
			t.Logf("%s: %s", p, phaseTime(r, p))
		}
		st, err := os.Stat(kubeconfig)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("kubeconfig: %v %v", st, err)
		}
		nodes := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}{"\n"}{end}`)
		want := ""
		for _, h := range all[:3] {
			want += h + " v" + site.Version + " containerd://" + site.ContainerdVersion + "\n"
		}
		if nodes != strings.TrimSpace(want) {
			t.Errorf("nodes:\n%s\nwant\n%s", nodes, want)
		}
		taints := kubectl(t, "get", "node", "lab-1", "-o", "jsonpath={.spec.taints[*].key}")
		if !strings.Contains(taints, "node-role.kubernetes.io/control-plane") {
			t.Errorf("lab-1's taints: %q", taints)
		}
		// kubernetes/labels put the GPU facts on the GPU workers' nodes.
		labels := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.gpukit\.dev/gpu\.product} {.metadata.labels.gpukit\.dev/gpu\.count}{"\n"}{end}`)
		if want := "lab-1  \nlab-2 NVIDIA-H100-80GB-HBM3 1\nlab-3 NVIDIA-H100-80GB-HBM3 1"; labels != want {
			t.Errorf("node labels:\n%s\nwant\n%s", labels, want)
		}
		if driver := kubectl(t, "get", "node", "lab-2", "-o", `jsonpath={.metadata.labels.gpukit\.dev/nvidia\.driver}`); driver != l.SSH(t, "lab-2", "nvidia-smi --query-gpu=driver_version --format=csv,noheader") {
			t.Errorf("lab-2's driver label: %q", driver)
		}
		// kube-proxy (host network: no CNI needed) runs on every node, on the
		// GPU workers through the NVIDIA runtime; every image came through
		// the mirror under its registry.k8s.io name.
		deadline := time.Now().Add(2 * time.Minute)
		var proxies string
		for {
			proxies = kubectl(t, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "-o", `jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}`)
			if strings.Count(proxies, "Running") == 3 || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Second)
		}
		if strings.Count(proxies, "Running") != 3 {
			t.Errorf("kube-proxy pods:\n%s", proxies)
		}
		for _, img := range strings.Fields(kubectl(t, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{range .spec.containers[*]}{.image} {end}{end}")) {
			if !strings.HasPrefix(img, "registry.k8s.io/") && !strings.HasPrefix(img, "ghcr.io/flannel-io/") {
				t.Errorf("pod image %s is neither registry.k8s.io's nor flannel's", img)
			}
		}
		for h, runtime := range map[string]string{"lab-1": "runc", "lab-2": "nvidia", "lab-3": "nvidia"} {
			got := l.SSH(t, h, "grep -h '^default_runtime_name' /etc/containerd/config.toml")
			if got != `default_runtime_name = "`+runtime+`"` {
				t.Errorf("%s: %s, want %s", h, got, runtime)
			}
		}
		// A container on a GPU worker runs through the NVIDIA runtime: the
		// simulator's hands it the GPUs it asks for (a host-network pod: no
		// CNI needed).
		pause := l.SSH(t, "lab-2", `awk -F'"' '/^sandbox/ {print $2}' /etc/containerd/config.toml`)
		kubectlIn(t, kubeconfig, `apiVersion: v1
kind: Pod
metadata: {name: gpu-runtime, namespace: default}
spec:
  nodeName: lab-2
  hostNetwork: true
  containers:
  - {name: c, image: `+pause+`, env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]}
`, "apply", "-f", "-")
		kubectl(t, "wait", "--for=condition=Ready", "pod/gpu-runtime", "--timeout=120s")
		env := l.SSH(t, "lab-2", `for p in $(pgrep -x pause); do tr '\0' '\n' </proc/$p/environ; done`)
		if !strings.Contains(env, "GPUSIM_RUNTIME=") || !strings.Contains(env, "NVIDIA_VISIBLE_DEVICES=all") {
			t.Errorf("the pod on lab-2 did not run through the NVIDIA runtime:\n%s", env)
		}
		kubectl(t, "delete", "pod", "gpu-runtime", "--wait=false")
		// The join token shows nowhere: not in the output, not in the logs.
		tokens := l.SSH(t, "lab-1", "KUBECONFIG=/etc/kubernetes/admin.conf kubeadm token list -o jsonpath='{.token}{\"\\n\"}'")
		if tokens == "" {
			t.Fatal("no bootstrap token on lab-1")
		}
		for _, token := range strings.Fields(tokens) {
			assertNowhere(t, token, r.out, r.logDir)
		}
		t.Logf("nodes:\n%s", kubectl(t, "get", "nodes", "-o", "wide"))
	})

	t.Run("the pod network runs across the nodes", func(t *testing.T) {
		if site.Charts == "" {
			t.Skip("no chart archives in the fixtures cache (make fixtures): the site installs no CNI")
		}
		// kubernetes/cni waited for every node to be Ready; CoreDNS, the
		// first pods on the pod network, roll out behind it.
		if got := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{end}`); got != "TrueTrueTrue" {
			t.Fatalf("nodes Ready: %q\n%s", got, kubectl(t, "get", "nodes", "-o", "wide"))
		}
		if out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), "--kubeconfig", kubeconfig, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s").CombinedOutput(); err != nil {
			t.Fatalf("CoreDNS: %v\n%s\n%s", err, out, kubectl(t, "get", "pods", "-A", "-o", "wide"))
		}
		flannel := kubectl(t, "-n", "kube-flannel", "get", "pods", "-o", `jsonpath={range .items[*]}{.spec.nodeName}={.status.phase} {end}`)
		if strings.Count(flannel, "=Running") != 3 {
			t.Errorf("flannel pods: %q", flannel)
		}
		// Every node asks each CoreDNS pod (its pod IP: across the nodes
		// through flannel's vxlan) and kube-dns' ClusterIP for the API's
		// service address.
		servers := "10.96.0.10 " + kubectl(t, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[*].status.podIP}")
		for _, h := range all[:3] {
			for _, server := range strings.Fields(servers) {
				if answer := l.SSH(t, h, "python3 - "+server+" <<'EOF'\n"+cluster.DNSQuery+"EOF"); answer != "10.96.0.1" {
					t.Errorf("DNS server %s answered %q on %s, want 10.96.0.1", server, answer, h)
				}
			}
		}
		t.Logf("pods:\n%s", kubectl(t, "get", "pods", "-A", "-o", "wide"))
	})

	t.Run("a second init changes nothing", func(t *testing.T) {
		start := time.Now()
		r := runInit(t, "init", "-i", inv, "--kubeconfig-out", kubeconfig)
		if r.code != cli.ExitOK || r.counts.Changed != 0 || r.counts.Unchanged != 3 || len(r.writeSteps()) != 0 {
			t.Fatalf("exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
		t.Logf("second init: %s", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("status lists the nodes", func(t *testing.T) {
		code, out, errOut := run(t, "status", "-i", inv, "-o", "json", "--log-dir", t.TempDir())
		var st flow.KubernetesStatus
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != cli.ExitOK || json.Unmarshal([]byte(lines[len(lines)-1]), &st) != nil || st.Type != flow.KindKubernetesStatus ||
			st.APIVersion != flow.ResultAPIVersion || len(st.Nodes) != 3 || !st.Healthy || len(st.Problems) != 0 {
			t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
		}
		// Every GPU worker's GPU, read from its simulated nvidia-smi -q -x
		// (a real H100 capture at the loaded driver's version).
		if len(st.GPUs) != 2 || st.GPUs[0].Host != "lab-2" || st.GPUs[1].Host != "lab-3" {
			t.Fatalf("status's GPUs: %+v", st.GPUs)
		}
		for _, g := range st.GPUs {
			if g.Status == facts.HealthFail || g.Driver != l.SSH(t, g.Host, "nvidia-smi --query-gpu=driver_version --format=csv,noheader") ||
				len(g.GPUs) != 1 || g.GPUs[0].ProductName != "NVIDIA H100 80GB HBM3" || g.GPUs[0].TemperatureC == nil {
				t.Errorf("status's GPUs of %s: %+v", g.Host, g)
			}
		}
		for i, n := range st.Nodes {
			if n.Name != all[i] || n.Kubelet != "v"+site.Version || n.Address != l.Hosts[i].Address {
				t.Errorf("node %d: %+v", i, n)
			}
		}
		if !slices.Contains(st.Nodes[0].Roles, "control-plane") {
			t.Errorf("lab-1's roles: %v", st.Nodes[0].Roles)
		}
		_, text, _ := run(t, "status", "-i", inv, "-o", "plain", "--log-dir", t.TempDir())
		t.Logf("gpukit status:\n%s", text[strings.Index(text, "NODE"):])
	})

	// The platform's commands reach the cluster as init's Kubernetes
	// phases do: the admin kubeconfig read over the first control plane's
	// SSH connection, Helm and client-go through it. The lab inventory turns
	// the addons off (no images for them), so status reads no release.
	t.Run("kubeflow status reads the cluster through the first control plane's SSH connection", func(t *testing.T) {
		code, out, errOut := run(t, "kubeflow", "status", "-i", inv, "-o", "json", "--log-dir", t.TempDir())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var st flow.KubeflowStatusResult
		if code != cli.ExitOK || json.Unmarshal([]byte(lines[len(lines)-1]), &st) != nil || st.Type != flow.KindKubeflowStatus || st.Status == nil ||
			len(st.Releases) != 0 || st.Kubeflow.Deployments != 0 {
			t.Fatalf("kubeflow status: exit %d %+v\n%s\n%s", code, st, out, errOut)
		}
	})

	// The monitoring path for real, from images Go modules make (the
	// platform set of test/k8s/build.sh): init with spec.addons.monitoring
	// on installs kube-prometheus-stack (its operator and config reloader,
	// Prometheus) and the statsd exporter through the first control
	// plane's connection; a training loop's line sent from a GPU worker to
	// the exporter's Service (kube-proxy, flannel) comes back from
	// Prometheus (through the API server's service proxy) with the
	// ServiceMonitor's cluster and node labels. What has no image here is
	// turned off through the inventory's values (cluster.PlatformImages):
	// Grafana, kube-state-metrics, node exporter, Alertmanager, the DCGM
	// exporter; Traefik is off until its own subtest (WithIngress).
	var mon cluster.Site // the site with the platform's images, once the subtest made it
	invMon := filepath.Join(dir, "kubernetes-3-monitoring.yaml")
	t.Run("init with monitoring: Prometheus scrapes a metric pushed to the statsd exporter", func(t *testing.T) {
		// init writes Grafana's generated login to ./<cluster>.credentials:
		// into a temporary directory, not the package's.
		t.Chdir(t.TempDir())
		mon = site.WithPlatform(t, l, kubeflow.MonitoringChart, kubeflow.StatsdImage)
		if err := mon.WriteInventory(gpuInv3, invMon, cluster.LabKubernetes); err != nil {
			t.Fatal(err)
		}
		dump := func() string {
			return kubectl(t, "get", "pods,statefulsets,servicemonitors", "-n", "monitoring", "-o", "wide") + "\n" +
				kubectl(t, "get", "events", "-n", "monitoring", "--sort-by=.lastTimestamp")
		}
		start := time.Now()
		cmdlines := sampleHosts(t, l, hostNames(l)...)
		r := runInit(t, "init", "-i", invMon, "--kubeconfig-out", kubeconfig)
		seen := cmdlines.stop()
		if r.code != cli.ExitOK || r.counts.Changed != 1 { // the first control plane, whose connection deploys
			t.Fatalf("init with monitoring: exit %d %+v %v\n%s\n%s", r.code, r.counts, r.failed, r.out, dump())
		}
		grafanaLoginCanary(t, l, r, seen, kubectl(t, "-n", kubeflow.MonitoringNamespace, "get", "secret", kubeflow.GrafanaAdminSecret, "-o", "jsonpath={.data.admin-password}"))
		t.Logf("init with monitoring on a converged cluster: %s (platform/monitoring %s, platform/training-metrics %s)",
			time.Since(start).Round(100*time.Millisecond), phaseTime(r, "platform/monitoring"), phaseTime(r, "platform/training-metrics"))
		if got := kubectl(t, "get", "servicemonitors", "-A", "-o", "name"); strings.Contains(got, "dcgm") || !strings.Contains(got, "statsd-exporter") {
			t.Errorf("ServiceMonitors:\n%s", got)
		}
		// The phase applies the exporter; its pod pulls and starts after.
		if out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), "--kubeconfig", kubeconfig, "-n", "monitoring", "rollout", "status", "deployment/statsd-exporter", "--timeout=180s").CombinedOutput(); err != nil {
			t.Fatalf("statsd exporter: %v\n%s\n%s", err, out, dump())
		}
		svc := kubectl(t, "-n", "monitoring", "get", "service", "statsd-exporter", "-o", "jsonpath={.spec.clusterIP}")
		exporterNode := kubectl(t, "-n", "monitoring", "get", "pods", "-l", "app.kubernetes.io/name=statsd-exporter", "-o", "jsonpath={.items[0].spec.nodeName}")
		line := "training.loss:0.42|g|#namespace:team-a,pod:mnist-0"
		query := "/api/v1/namespaces/monitoring/services/kube-prometheus-stack-prometheus:9090/proxy/api/v1/query?query=training_loss"
		type sample struct {
			Metric map[string]string
			Value  []any
		}
		var got []sample
		var last string
		deadline := time.Now().Add(5 * time.Minute)
		for len(got) == 0 && time.Now().Before(deadline) {
			// UDP: resent each round, as a training loop sends each step.
			l.SSH(t, "lab-3", "bash -c 'echo \""+line+"\" >/dev/udp/"+svc+"/9125' || true")
			out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), "--kubeconfig", kubeconfig, "get", "--raw", query).CombinedOutput()
			last = string(out)
			var resp struct {
				Status string
				Data   struct{ Result []sample }
			}
			if err == nil && json.Unmarshal(out, &resp) == nil && resp.Status == "success" {
				got = resp.Data.Result
			}
			if len(got) == 0 {
				time.Sleep(5 * time.Second)
			}
		}
		if len(got) != 1 {
			t.Fatalf("Prometheus has %d training_loss series after %s; last answer: %s\n%s", len(got), time.Since(start).Round(time.Second), last, dump())
		}
		m := got[0].Metric
		if m["exported_namespace"] != "team-a" || m["exported_pod"] != "mnist-0" || m["node"] != exporterNode || m["cluster"] == "" || m["job"] != "statsd-exporter" || len(got[0].Value) != 2 || got[0].Value[1] != "0.42" {
			t.Errorf("training_loss = %+v, want team-a/mnist-0 0.42 from the exporter on %s with a cluster label", got[0], exporterNode)
		}
		t.Logf("Prometheus scraped %v %v, %s after init began", m, got[0].Value[1], time.Since(start).Round(time.Second))

		if r := runInit(t, "init", "-i", invMon, "--kubeconfig-out", kubeconfig); r.code != cli.ExitOK || r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Fatalf("second init with monitoring: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
		code, out, errOut := run(t, "kubeflow", "status", "-i", invMon, "-o", "json", "--log-dir", t.TempDir())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var st struct {
			Releases []struct{ Name, Status string }
			Platform struct{ Deployments, Available int }
		}
		if code != cli.ExitOK || json.Unmarshal([]byte(lines[len(lines)-1]), &st) != nil || len(st.Releases) != 1 || st.Releases[0].Name != "kube-prometheus-stack" || st.Platform.Available != 1 {
			t.Errorf("kubeflow status: exit %d %+v\n%s\n%s", code, st, out, errOut)
		}
	})

	// gpuMetrics on: the dcgm-exporter chart gpukit deploys runs on the GPU
	// nodes, its image the GPU SIMULATOR's stand-in replaying a real H100
	// exporter's scrape with each node's own GPU (test/gpusim/cmd/
	// dcgm-exporter); gpukit status reads every node's exporter through the
	// API server's pod proxy and puts its readings (utilization, the pod
	// using the GPU) beside nvidia-smi's, and Prometheus scrapes the
	// exporters through gpukit's ServiceMonitor, with the node label.
	var dcgmSite cluster.Site // the site with the DCGM exporter's stand-in, once the subtest made it
	t.Run("status reads each GPU node's DCGM exporter", func(t *testing.T) {
		if mon.Monitoring == "" {
			t.Skip("the monitoring subtest did not run")
		}
		// Before the Chdir: both are found from the checkout.
		scrape := filepath.Join(fixtures.Dir(t, "dcgm"), "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom")
		exporter := gpusim.DCGMExporter(t)
		t.Chdir(t.TempDir())
		uuids := map[string][]string{"lab-2": {"GPU-5a1e0002-6c2d-4b1e-9f00-000000000002"}, "lab-3": {"GPU-5a1e0003-6c2d-4b1e-9f00-000000000003"},
			"lab-4": {"GPU-5a1e0004-6c2d-4b1e-9f00-000000000004"}} // lab-4 joins later
		d := mon.WithDCGMSimulator(t, l, kubeflow.DCGMChart, exporter, scrape, uuids)
		dcgmSite = d
		invDCGM := filepath.Join(dir, "kubernetes-3-dcgm.yaml")
		if err := d.WriteInventory(gpuInv3, invDCGM, cluster.LabKubernetes); err != nil {
			t.Fatal(err)
		}
		r := runInit(t, "init", "-i", invDCGM, "--kubeconfig-out", kubeconfig)
		if r.code != cli.ExitOK {
			t.Fatalf("init with gpuMetrics: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		if out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), "--kubeconfig", kubeconfig, "-n", "monitoring", "rollout", "status", "daemonset/dcgm-exporter", "--timeout=180s").CombinedOutput(); err != nil {
			t.Fatalf("dcgm-exporter: %v\n%s\n%s", err, out, kubectl(t, "get", "pods,events", "-n", "monitoring", "-o", "wide"))
		}
		code, out, errOut := run(t, "status", "-i", invDCGM, "-o", "json", "--log-dir", t.TempDir())
		var st struct {
			Healthy bool
			GPUs    []gpuhealth.HostGPUs
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != cli.ExitOK || json.Unmarshal([]byte(lines[len(lines)-1]), &st) != nil || !st.Healthy || len(st.GPUs) != 2 {
			t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
		}
		for _, h := range st.GPUs {
			g := h.GPUs[0]
			if len(g.DCGM) != 1 || g.DCGM[0].UUID != uuids[h.Host][0] || g.DCGM[0].Hostname != h.Host || g.DCGM[0].Fields[dcgm.FieldTemp] != 30 ||
				!slices.Equal(g.DCGM[0].Pods, []string{"dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5"}) || len(h.DCGM) != 0 {
				t.Errorf("%s's DCGM readings: GPU %+v, host %+v", h.Host, g.DCGM, h.DCGM)
			}
		}
		_, text, _ := run(t, "status", "-i", invDCGM, "-o", "plain", "--log-dir", t.TempDir())
		if !strings.Contains(text, "used by dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5 (dcgm-exporter)") {
			t.Errorf("status does not show the pod on each GPU:\n%s", text)
		}
		t.Logf("gpukit status with the DCGM exporters:\n%s", text[strings.Index(text, "HOST"):])
		query := "/api/v1/namespaces/monitoring/services/kube-prometheus-stack-prometheus:9090/proxy/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP"
		var nodes []string
		for deadline := time.Now().Add(3 * time.Minute); len(nodes) != 2 && time.Now().Before(deadline); time.Sleep(5 * time.Second) {
			var resp struct {
				Data struct {
					Result []struct{ Metric map[string]string }
				}
			}
			nodes = nil
			if json.Unmarshal([]byte(kubectl(t, "get", "--raw", query)), &resp) == nil {
				for _, s := range resp.Data.Result {
					nodes = append(nodes, s.Metric["node"])
				}
			}
			slices.Sort(nodes)
		}
		if !slices.Equal(nodes, []string{"lab-2", "lab-3"}) {
			t.Errorf("Prometheus's DCGM_FI_DEV_GPU_TEMP series are of nodes %v, want lab-2 and lab-3", nodes)
		}
	})

	// The ingress on: the real Traefik (built from its module, two modules
	// stood in: test/k8s/traefik) on lab-1's ports 80 and 443, Grafana's
	// labelled stand-in in the monitoring stack. From the lab's bridge, as
	// a browser would: HTTP is sent to HTTPS, and https://grafana.<domain>
	// answers with gpukit's certificate for the domain, from Grafana,
	// which takes the generated login and refuses another.
	t.Run("the real Traefik publishes Grafana with TLS", func(t *testing.T) {
		if dcgmSite.Monitoring == "" {
			t.Skip("the DCGM subtest did not run")
		}
		t.Chdir(t.TempDir())
		in := dcgmSite.WithIngress(t, l, kubeflow.TraefikChart, kubeflow.MonitoringChart)
		invIngress := filepath.Join(dir, "kubernetes-3-ingress.yaml")
		if err := in.WriteInventory(gpuInv3, invIngress, cluster.LabKubernetes); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := runInit(t, "init", "-i", invIngress, "--kubeconfig-out", kubeconfig)
		if r.code != cli.ExitOK {
			t.Fatalf("init with the ingress: exit %d %+v %v\n%s\n%s", r.code, r.counts, r.failed, r.out,
				kubectl(t, "get", "pods,events", "-n", kubeflow.IngressNamespace, "-o", "wide"))
		}
		t.Logf("init with the ingress on a converged cluster: %s (platform/ingress %s, platform/routes %s)",
			time.Since(start).Round(100*time.Millisecond), phaseTime(r, "platform/ingress"), phaseTime(r, kubeflow.PhaseRoutes))
		kubectl(t, "-n", kubeflow.MonitoringNamespace, "rollout", "status", "deployment/"+kubeflow.GrafanaService, "--timeout=180s")
		host := kubectl(t, "-n", kubeflow.MonitoringNamespace, "get", "ingress", "gpukit-grafana", "-o", "jsonpath={.spec.rules[0].host}")
		if want := "grafana." + l.Hosts[0].Address + ".nip.io"; host != want {
			t.Fatalf("Grafana's route is for %q, want %q", host, want)
		}
		crt, err := base64.StdEncoding.DecodeString(kubectl(t, "-n", kubeflow.IngressNamespace, "get", "secret", kubeflow.TLSSecret, "-o", `jsonpath={.data.tls\.crt}`))
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := base64.StdEncoding.DecodeString(kubectl(t, "-n", kubeflow.MonitoringNamespace, "get", "secret", kubeflow.GrafanaAdminSecret, "-o", "jsonpath={.data.admin-password}"))
		via := newIngress(l.Hosts[0].Address, host, crt)
		if resp, _ := via.get(t, "http", "/", "", ""); resp.StatusCode/100 != 3 || !strings.HasPrefix(resp.Header.Get("Location"), "https://"+host) {
			t.Errorf("http://%s/: %s, Location %q; want a redirect to https", host, resp.Status, resp.Header.Get("Location"))
		}
		resp, body := via.get(t, "https", "/api/health", "", "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Gpukit-Stand-In") != "grafana" || !strings.Contains(body, `"database":"ok"`) {
			t.Fatalf("https://%s/api/health: %s %v %s", host, resp.Status, resp.Header, body)
		}
		if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || !slices.Contains(resp.TLS.PeerCertificates[0].DNSNames, "*."+strings.TrimPrefix(host, "grafana.")) {
			t.Fatalf("Traefik's certificate is not gpukit's for the domain: %+v", resp.TLS)
		}
		t.Logf("https://%s/api/health through Traefik on lab-1: %s from Grafana's stand-in, certificate %s", host, resp.Status, resp.TLS.PeerCertificates[0].Subject.CommonName)
		if resp, body := via.get(t, "https", "/api/user", "admin", string(pw)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"login":"admin"`) {
			t.Errorf("Grafana's generated login through Traefik: %s %s", resp.Status, body)
		}
		if resp, _ := via.get(t, "https", "/api/user", "admin", "prom-operator"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the chart's default login through Traefik: %s, want 401", resp.Status)
		}
		if r := runInit(t, "init", "-i", invIngress, "--kubeconfig-out", kubeconfig); r.code != cli.ExitOK || r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Fatalf("second init with the ingress: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
	})

	t.Run("add-node joins lab-4, touching only it and the control plane", func(t *testing.T) {
		before := sshLogins(t, l, all...)
		start := time.Now()
		r := runInit(t, "add-node", "-i", inv4, "lab-4")
		if r.code != cli.ExitOK || r.counts.Changed != 2 { // lab-4, and the control plane that labels its node
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("add-node of 1 host (NVIDIA stack + Kubernetes + join): %s", time.Since(start).Round(100*time.Millisecond))
		after := sshLogins(t, l, all...)
		for _, h := range []string{"lab-2", "lab-3"} {
			if after[h] != before[h] {
				t.Errorf("add-node logged in to %s (%d -> %d)", h, before[h], after[h])
			}
		}
		if after["lab-4"] == before["lab-4"] || after["lab-1"] == before["lab-1"] {
			t.Errorf("logins before %v, after %v", before, after)
		}
		if got := kubectl(t, "get", "node", "lab-4", "-o", `jsonpath={.status.nodeInfo.kubeletVersion} {.metadata.labels.gpukit\.dev/gpu\.product}`); got != "v"+site.Version+" NVIDIA-H100-80GB-HBM3" {
			t.Errorf("lab-4's kubelet: %q", got)
		}
		if r := runInit(t, "init", "-i", inv4, "--kubeconfig-out", kubeconfig); r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Fatalf("init of the 4 hosts after add-node: exit %d %+v writes %v", r.code, r.counts, r.writeSteps())
		}
	})

	t.Run("reset cleans a worker and init joins it again", func(t *testing.T) {
		start := time.Now()
		r := runInit(t, "reset", "-i", inv4, "--hosts", "lab-3", "--yes")
		if r.code != cli.ExitOK || r.counts.Changed != 2 {
			t.Fatalf("reset: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("reset of lab-3: %s", time.Since(start).Round(100*time.Millisecond))
		if nodes := kubectl(t, "get", "nodes", "-o", "name"); strings.Contains(nodes, "lab-3") {
			t.Errorf("lab-3 is still a node:\n%s", nodes)
		}
		left := l.SSH(t, "lab-3", "ls /etc/kubernetes/kubelet.conf /etc/kubernetes/manifests/*.yaml /etc/containerd/certs.d/*/hosts.toml 2>/dev/null | wc -l; "+
			"iptables-save | grep -c KUBE- || true; systemctl is-active containerd")
		if left != "0\n0\nactive" {
			t.Errorf("lab-3 after reset (files left, KUBE- rules, containerd):\n%s", left)
		}
		if r := runInit(t, "reset", "-i", inv4, "--hosts", "lab-3", "--yes"); r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("second reset: exit %d %+v writes %v", r.code, r.counts, r.writeSteps())
		}
		r = runInit(t, "init", "-i", inv4, "--kubeconfig-out", kubeconfig)
		if r.code != cli.ExitOK || r.counts.Changed != 2 { // lab-3, and the control plane that labels its node
			t.Fatalf("init after reset: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		if got := kubectl(t, "get", "node", "lab-3", "-o", "name"); got != "node/lab-3" {
			t.Errorf("lab-3 after init: %q", got)
		}
	})

	// A training pod's checkpoint hook through the real kubelet: a pod
	// annotated gpukit.dev/training=true, its hook signal:SIGUSR1, runs on
	// lab-4 (Debian's busybox-static as its image, from the lab registry as
	// docker.io's mirror). upgrade driver --hosts lab-4 cordons lab-4 and
	// sends the signal through the API's exec (API server, kubelet,
	// containerd, runc): the container's trap answers in its log. The
	// training still runs, so lab-4 is uncordoned untouched, and the
	// command exits 3 naming it.
	t.Run("a training pod's checkpoint hook runs through the kubelet", func(t *testing.T) {
		image := mirrorBusybox(t, l, "lab-4")
		kubectlIn(t, kubeconfig, `apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: default
  annotations: {gpukit.dev/training: "true", gpukit.dev/checkpoint: "signal:SIGUSR1", gpukit.dev/checkpoint-timeout: 30s}
spec:
  nodeName: lab-4
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+image+`
    command: [sh, -c, 'trap "echo checkpoint asked" USR1; while :; do sleep 1; done']
`, "apply", "-f", "-")
		kubectl(t, "wait", "--for=condition=Ready", "pod/train", "--timeout=180s")
		uid := kubectl(t, "get", "pod", "train", "-o", "jsonpath={.metadata.uid}")
		r := runInit(t, "upgrade", "driver", "-i", inv4, "--driver", "590.48.01", "--hosts", "lab-4", "--state", filepath.Join(t.TempDir(), "hook.json"), "--skip-etcd-snapshot")
		if r.code != cli.ExitHostsFailed || len(r.failed) != 0 || !strings.Contains(r.out, "lab-4: training still running (default/train)") {
			t.Fatalf("upgrade with training on lab-4: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		if w := r.writeSteps()["lab-4"]; !slices.Equal(w, []string{"cordon lab-4", "checkpoint default/train", "uncordon lab-4"}) {
			t.Errorf("lab-4's writes: %v", w)
		}
		var logs string
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs, "checkpoint asked") && time.Now().Before(deadline); time.Sleep(time.Second) {
			logs = kubectl(t, "logs", "train")
		}
		if !strings.Contains(logs, "checkpoint asked") {
			t.Errorf("the training did not get its checkpoint signal; its log: %q", logs)
		}
		if got := kubectl(t, "get", "pod", "train", "-o", "jsonpath={.metadata.uid} {.status.phase}"); got != uid+" Running" {
			t.Errorf("the training pod after the upgrade: %q, want %s Running", got, uid)
		}
		if got := kubectl(t, "get", "node", "lab-4", "-o", "jsonpath={.spec.unschedulable}"); got != "" {
			t.Errorf("lab-4 is left unschedulable: %q", got)
		}
		if got := l.SSH(t, "lab-4", "nvidia-smi --query-gpu=driver_version --format=csv,noheader"); got != "580.95.05" {
			t.Errorf("lab-4's driver was changed under its training: %s", got)
		}
		kubectl(t, "delete", "pod", "train", "--wait=true")
	})

	// The rolling driver upgrade on the real cluster and the simulated GPUs:
	// 580.95.05 -> 590.48.01 on the three GPU workers, one at a time. A
	// serving Deployment's pods move off each node through the drain (and
	// its PodDisruptionBudget) and run again after. lab-3 is broken on
	// purpose (its GPU falls off the bus: nvidia-smi cannot reach it):
	// verification catches it, it stays cordoned and the rollout
	// stops before lab-4; fixed, --resume finishes it without touching
	// lab-2 again. Packages change version and are held again, each worker
	// reboots once (the control plane never), the nodes' driver labels
	// follow, and a second run changes nothing.
	t.Run("upgrade driver rolls the GPU workers to 590.48.01, one at a time", func(t *testing.T) {
		pause := l.SSH(t, "lab-2", `awk -F'"' '/^sandbox/ {print $2}' /etc/containerd/config.toml`)
		kubectlIn(t, kubeconfig, `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      hostNetwork: true
      containers: [{name: c, image: `+pause+`}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: serve, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: serve}}
`, "apply", "-f", "-")
		kubectl(t, "rollout", "status", "deployment/serve", "--timeout=180s")
		workers := []string{"lab-2", "lab-3", "lab-4"}
		boots := map[string]string{}
		for _, h := range all {
			boots[h] = l.SSH(t, h, "cat /proc/sys/kernel/random/boot_id")
		}
		state := filepath.Join(t.TempDir(), "lab.driver.json")
		l.SSH(t, "lab-3", "touch /etc/gpusim/gpu-lost")
		// The lab's etcd image (built from etcd's module) has no etcdctl:
		// the control plane gets Debian's, as a host may have it.
		l.SSHWithin(t, "lab-1", "DEBIAN_FRONTEND=noninteractive apt-get -qq install -y etcd-client >/dev/null", 10*time.Minute)
		args := []string{"upgrade", "driver", "-i", inv4, "--driver", "590.48.01", "--state", state, "--drain-timeout", "3m",
			"--delete-emptydir-data"} // Prometheus (the monitoring subtest's) keeps its data in an emptyDir
		start := time.Now()
		r := runInit(t, args...)
		if r.code != cli.ExitHostsFailed || !strings.HasPrefix(r.failed["lab-3"], "nvidia/verify: not verified") || len(r.failed) != 1 {
			t.Fatalf("first run: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		t.Logf("first run (lab-2 upgraded, lab-3 caught): %s; %s", time.Since(start).Round(100*time.Millisecond), upgradeReport(r.out))
		// The etcd snapshot, taken before the first node, is a real one.
		snapshot := regexp.MustCompile(`"etcdSnapshot":"(/var/lib/gpukit/etcd-snapshots/before-driver-590\.48\.01-[0-9TZ]+\.db)"`).FindStringSubmatch(r.out)
		if snapshot == nil {
			t.Fatalf("no etcd snapshot reported:\n%s", r.out)
		}
		if got := l.SSH(t, "lab-1", "stat -c %a "+snapshot[1]+"; ETCDCTL_API=3 etcdctl snapshot status -w json "+snapshot[1]); !strings.HasPrefix(got, "600\n{") || !strings.Contains(got, `"revision":`) {
			t.Errorf("the snapshot on lab-1: %s", got)
		}
		// gpukit status names the broken GPU and exits non-zero.
		code, out, errOut := run(t, "status", "-i", inv4, "-o", "plain", "--log-dir", t.TempDir())
		if code != cli.ExitHostsFailed || !strings.Contains(errOut, "lab-3's GPUs fail their health check") || !strings.Contains(out, "lab-3: nvidia-smi: Unable to determine the device handle") {
			t.Errorf("status with lab-3's GPU lost: exit %d\n%s\n%s", code, out, errOut)
		}
		if got := kubectl(t, "get", "node", "lab-3", "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
			t.Errorf("lab-3 after failing verification: unschedulable %q, want true", got)
		}
		if got := l.SSH(t, "lab-4", "nvidia-smi --query-gpu=driver_version --format=csv,noheader"); got != "580.95.05" {
			t.Errorf("lab-4 runs %s: the rollout went on past a failed node", got)
		}
		l.SSH(t, "lab-3", "rm /etc/gpusim/gpu-lost")
		lab2 := r.writeSteps()["lab-2"]
		// A training run outside the cluster computes on lab-4's GPU: the
		// resume finishes lab-3, then refuses to touch lab-4's driver (the
		// reboot would end that run) and stops there, lab-4 drained and
		// cordoned; the process gone, the next resume finishes it.
		l.SSH(t, "lab-4", "echo '4242, python train.py, 30000 MiB' >/etc/gpusim/compute-apps")
		r = runInit(t, append(args, "--resume")...)
		if r.code != cli.ExitHostsFailed || !strings.HasPrefix(r.failed["lab-4"], "upgrade/stop-gpu-consumers: ") || !strings.Contains(r.out, "4242, python train.py") || len(r.failed) != 1 {
			t.Fatalf("resume with a process computing on lab-4: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		if got := l.SSH(t, "lab-4", `nvidia-smi --query-gpu=driver_version --format=csv,noheader; dpkg-query -W -f='${Version}\n' | grep -c '^590\.48\.01-' || true`); got != "580.95.05\n0" {
			t.Errorf("lab-4's driver was touched while a process computed on it: %q", got)
		}
		if w := r.writeSteps()["lab-2"]; len(w) != 0 {
			t.Errorf("the resume changed lab-2 again: %v (first run: %v)", w, lab2)
		}
		l.SSH(t, "lab-4", "rm /etc/gpusim/compute-apps")
		start = time.Now()
		r = runInit(t, append(args, "--resume", "--write-inventory")...)
		if r.code != cli.ExitOK {
			t.Fatalf("resume: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		t.Logf("second resume (lab-4 upgraded): %s; %s", time.Since(start).Round(100*time.Millisecond), upgradeReport(r.out))
		if w := r.writeSteps()["lab-2"]; len(w) != 0 {
			t.Errorf("the resume changed lab-2 again: %v (first run: %v)", w, lab2)
		}
		for _, h := range workers {
			assertDriverSwapped(t, l, h, "590.48.01", "580.95.05")
			if got := l.SSH(t, h, "cat /proc/sys/kernel/random/boot_id"); got == boots[h] {
				t.Errorf("%s did not reboot for its new driver", h)
			}
			if got := kubectl(t, "get", "node", h, "-o", `jsonpath={.spec.unschedulable}/{.metadata.labels.gpukit\.dev/nvidia\.driver}`); got != "/590.48.01" {
				t.Errorf("%s after the rollout: unschedulable/driver label %q", h, got)
			}
		}
		if got := l.SSH(t, "lab-1", "cat /proc/sys/kernel/random/boot_id"); got != boots["lab-1"] {
			t.Error("the control plane rebooted: it has no GPU")
		}
		if b, err := os.ReadFile(inv4); err != nil || !strings.Contains(string(b), "590.48.01") {
			t.Errorf("--write-inventory: %v\n%s", err, b)
		}
		kubectl(t, "rollout", "status", "deployment/serve", "--timeout=180s")
		r = runInit(t, "upgrade", "driver", "-i", inv4, "--driver", "590.48.01", "--state", state, "--skip-etcd-snapshot")
		if r.code != cli.ExitOK || r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Errorf("a second upgrade: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
	})

	// MIG on the kubeadm cluster: mig apply takes lab-2 through the
	// rollout (cordoned, drained: the serving pod moves through its PDB),
	// partitions its simulated H100 with the balanced layout, waits for the
	// node to be Ready and gives it back. The layout's boot unit runs
	// before the kubelet. A second run changes nothing.
	t.Run("mig apply partitions lab-2 through the drain", func(t *testing.T) {
		raw, err := os.ReadFile(inv4)
		if err != nil {
			t.Fatal(err)
		}
		invMIG := withNVIDIA(t, string(raw), "kube-mig.yaml", "{}", map[string]string{"lab-2": "all-balanced"})
		state := filepath.Join(t.TempDir(), "kube.mig.json")
		start := time.Now()
		r := runInit(t, "mig", "apply", "-i", invMIG, "--state", state, "--drain-timeout", "3m", "--delete-emptydir-data")
		if r.code != cli.ExitOK || r.counts.Changed != 1 || r.counts.Failed != 0 {
			t.Fatalf("mig apply: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("mig apply on the kubeadm cluster (lab-2 partitioned): %s", time.Since(start).Round(100*time.Millisecond))
		w := r.writeSteps()["lab-2"]
		for _, step := range []string{"cordon lab-2", "drain lab-2", "partition the GPUs", "uncordon lab-2"} {
			if !slices.Contains(w, step) {
				t.Errorf("lab-2's writes lack %q: %v", step, w)
			}
		}
		for _, h := range []string{"lab-3", "lab-4"} {
			if len(r.writeSteps()[h]) != 0 {
				t.Errorf("%s has no layout and was changed: %v", h, r.writeSteps()[h])
			}
		}
		if got := migDevices(t, l, "lab-2"); got != "1g.10gb,1g.10gb,2g.20gb,3g.40gb" {
			t.Errorf("lab-2's MIG devices: %q", got)
		}
		if got := l.SSH(t, "lab-2", "systemctl is-enabled gpukit-mig.service; systemctl show -P Before gpukit-mig.service"); !strings.HasPrefix(got, "enabled\n") || !strings.Contains(got, "kubelet.service") {
			t.Errorf("gpukit-mig.service: %q", got)
		}
		if got := kubectl(t, "get", "node", "lab-2", "-o", "jsonpath={.spec.unschedulable}"); got != "" {
			t.Errorf("lab-2 is left unschedulable: %q", got)
		}
		kubectl(t, "rollout", "status", "deployment/serve", "--timeout=180s")
		r = runInit(t, "mig", "apply", "-i", invMIG, "--state", state)
		if r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("mig apply again: exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
	})
}

// assertDriverSwapped checks a host after a driver upgrade from old to
// release: nvidia-smi runs release, every installed package of release is
// held, none of old is left.
func assertDriverSwapped(t *testing.T, l *lab.Lab, h, release, old string) {
	t.Helper()
	if got := l.SSH(t, h, "nvidia-smi --query-gpu=driver_version --format=csv,noheader"); got != release {
		t.Errorf("%s runs driver %s", h, got)
	}
	at := func(v string) string { return "/^" + strings.ReplaceAll(v, ".", "\\.") + "-/" }
	held := l.SSH(t, h, `dpkg-query -W -f='${Package} ${Version}\n' | awk '$2 ~ `+at(release)+` {print $1}' | sort; echo --; apt-mark showhold | sort; echo --; dpkg-query -W -f='${Package} ${Version}\n' | awk '$2 ~ `+at(old)+`' | wc -l`)
	parts := strings.Split(held, "--")
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[2]) != "0" {
		t.Errorf("%s's packages (%s / held / count of %s):\n%s", h, release, old, held)
		return
	}
	for _, p := range strings.Fields(parts[0]) {
		if !slices.Contains(strings.Fields(parts[1]), p) {
			t.Errorf("%s: %s at %s is not held", h, p, release)
		}
	}
}

// upgradeReport is the upgrade's last JSON object, for the log: the order,
// the waves and the API requests.
func upgradeReport(out string) string {
	for _, line := range strings.Split(out, "\n") {
		var r flow.UpgradeResult
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == flow.KindUpgrade {
			return fmt.Sprintf("nodes %v in %d waves, %d API requests", r.Order, r.Waves, r.APIRequests)
		}
	}
	return "no upgrade report"
}

// kubectlIn runs kubectl with stdin.
func kubectlIn(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, clusterDiagnosis(t, kubeconfig, args))
	}
	return strings.TrimSpace(string(out))
}

// clusterDiagnosis is what a failed wait leaves to read: where the pods
// are, why they wait (their events), and the nodes' conditions and taints.
// A CI run keeps nothing else of the lab.
func clusterDiagnosis(t *testing.T, kubeconfig string, args []string) string {
	if len(args) == 0 || (args[0] != "wait" && args[0] != "rollout") {
		return ""
	}
	bin := filepath.Join(cluster.Binaries(t), "kubectl")
	var b strings.Builder
	for _, q := range [][]string{
		{"get", "pods", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} taints={.spec.taints} {range .status.conditions[*]}{.type}={.status}({.reason}) {end}{"\n"}{end}`},
	} {
		out, _ := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, q...)...).CombinedOutput()
		fmt.Fprintf(&b, "\n--- kubectl %s\n%s", strings.Join(q, " "), out)
	}
	return b.String()
}

// phaseTime is how long phase took in r (from its first to its last event).
func phaseTime(r initResult, phase string) time.Duration {
	var first, last time.Time
	for _, e := range r.events {
		if e.Phase != phase || e.Time.IsZero() {
			continue
		}
		if first.IsZero() {
			first = e.Time
		}
		last = e.Time
	}
	return last.Sub(first).Round(100 * time.Millisecond)
}

// The other shapes a site runs, each from the lab site's mirrors, one after
// the other: an HA control plane (3 control planes, no worker: the
// images from a private registry with its own CA and a login, the
// plain-HTTP one cut off; the
// control-plane taint stays off; the lab has no load balancer, so the
// endpoint is lab-1's address: this shows the control planes joining one at
// a time with the certificates uploaded under the run's key, not failover;
// then etcd's scheduled snapshots, a backup and a restore: etcdLifecycle),
// and the oldest Kubernetes there are modules for with Debian's own
// containerd 1.6 (config version 2), at a site whose hosts reach their
// mirrors only through its HTTP proxy (spec.proxy; the lab's squid, the
// hosts' direct way to the mirrors cut) and whose servers have two NICs:
// SSH on the management network, the cluster on the fabric (nodeAddress).
func TestLabKubernetesVariants(t *testing.T) {
	cluster.Require(t)
	lab.Require(t)
	// Not parallel: Go runs it before the parallel lab tests, alone in this
	// package. Kubeadm clusters beside them starved the NVIDIA tests' hosts
	// of CPU on a 2-core machine (reboots past their timeout, found by CI).
	versions := cluster.Versions(t)
	oldest := strings.TrimPrefix(versions[len(versions)-1], "v")
	for _, c := range []struct {
		name, version, kube string
		hosts               int
		roles               map[string]string
		proxy               bool // and a fabric
	}{
		{"ha-3-control-planes", "", "controlPlaneEndpoint: 10.251.2.1\netcdBackup: {schedule: hourly, keep: 2}\n", 3,
			map[string]string{"lab-2": "control-plane", "lab-3": "control-plane"}, false},
		{"oldest-with-distribution-containerd-through-a-proxy-on-a-fabric", oldest, "containerd: {source: distribution}\n", 2, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := lab.Start(t, lab.Options{Hosts: c.hosts, Kube: true, Fabric: c.proxy})
			dir := t.TempDir()
			b, err := os.ReadFile(l.Inventory)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			for h, role := range c.roles {
				re := regexp.MustCompile(`(- name: ` + regexp.QuoteMeta(h) + `\n      address: [^\n]*\n      roles: )\[worker\]`)
				if !re.MatchString(s) {
					t.Fatalf("no worker %s in %s", h, l.Inventory)
				}
				s = re.ReplaceAllString(s, "${1}["+role+"]")
			}
			if c.proxy {
				for _, h := range l.Hosts {
					line := "      address: " + h.Address + "\n"
					if !strings.Contains(s, line) {
						t.Fatalf("no %q in %s", line, l.Inventory)
					}
					s = strings.Replace(s, line, line+"      nodeAddress: "+h.Fabric+"\n", 1)
				}
			}
			src := filepath.Join(dir, "lab.yaml")
			if err := os.WriteFile(src, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			site := cluster.NewSite(t, l, c.version)
			kube := strings.ReplaceAll(c.kube, "10.251.2.1", l.Hosts[0].Address) + cluster.LabKubernetes
			inv := filepath.Join(dir, "kubernetes.yaml")
			if err := site.WriteInventory(src, inv, mergeContainerd(kube)); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, h := range l.Hosts {
				wg.Go(func() { l.UseDebianMirror(t, h.Name) })
			}
			wg.Wait()
			var proxied *proxyProof
			if c.proxy {
				proxied = throughProxy(t, l, inv)
			}
			var private *lab.SecureRegistry
			if c.name == "ha-3-control-planes" {
				private = usePrivateRegistry(t, l, inv)
			}
			// The canary (HA: join tokens and a certificate key): a site's
			// registry password in a containerd hosts.toml gpukit reads, and
			// every process's command line sampled during the run.
			const registryCanary = "gpukit-canary-registry-7f3e9c21"
			var cmdlines *sampler
			if c.name == "ha-3-control-planes" {
				auth := base64.StdEncoding.EncodeToString([]byte("robot:" + registryCanary))
				l.SSH(t, "lab-2", "mkdir -p /etc/containerd/certs.d/private.example.com && cat >/etc/containerd/certs.d/private.example.com/hosts.toml <<'EOF'\n"+
					"server = \"https://private.example.com\"\n[host.\"https://private.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n"+
					"  [host.\"https://private.example.com\".header]\n    authorization = \"Basic "+auth+"\"\nEOF")
				cmdlines = sampleHosts(t, l, hostNames(l)...)
			}
			start := time.Now()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			r := runInit(t, "init", "-i", inv, "--kubeconfig-out", kubeconfig)
			if cmdlines != nil {
				seen := cmdlines.stop()
				if r.code == cli.ExitOK {
					places := canaryPlaces(t, l, r, seen, hostNames(l)...)
					if !strings.Contains(seen, "kubeadm join --config") {
						t.Error("the command-line sampler never saw kubeadm join: it would miss a secret passed as an argument")
					}
					// The password's absence means something only if gpukit read it.
					if read := "registry logins found in /etc/containerd/certs.d/private.example.com/hosts.toml (1 values)"; !strings.Contains(places["log lab-2.log"], read) {
						t.Errorf("lab-2's log does not say %q: the registry canary was never read", read)
					}
					tokens := strings.Fields(l.SSH(t, "lab-1", "kubeadm token list --kubeconfig /etc/kubernetes/admin.conf -o jsonpath='{.token}{\"\\n\"}'"))
					if len(tokens) == 0 {
						t.Error("no join token left to search for")
					}
					secrets := map[string]string{"registry password": registryCanary,
						"registry authorization":         base64.StdEncoding.EncodeToString([]byte("robot:" + registryCanary)),
						"private registry password":      private.Password,
						"private registry authorization": base64.StdEncoding.EncodeToString([]byte(private.Username + ":" + private.Password))}
					for i, tok := range tokens {
						secrets[fmt.Sprintf("join token %d", i+1)] = tok
						secrets[fmt.Sprintf("join token %d's secret half", i+1)] = tok[strings.IndexByte(tok, '.')+1:]
					}
					for what, v := range secrets {
						if where := hits(places, v); len(where) > 0 {
							t.Errorf("the %s is in: %v", what, where)
						}
					}
					kubectl := kubectlAt(t, filepath.Join(cluster.BuildVersion(t, "v"+site.Version), "kubectl"), kubeconfig)
					if where := certificateKeys(t, kubectl, places); len(where) > 0 {
						t.Errorf("the certificate key is in: %v", where)
					}
					size := 0
					for _, text := range places {
						size += len(text)
					}
					t.Logf("canary: %d join tokens, the certificate key, a registry password: searched in %d places (%d KiB; %d command lines sampled)",
						len(tokens), len(places), size/1024, strings.Count(seen, "\n"))
				}
			}
			if r.code != cli.ExitOK || r.counts.Changed != c.hosts {
				t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
			}
			t.Logf("init of %d hosts, Kubernetes %s: %s", c.hosts, site.Version, time.Since(start).Round(100*time.Millisecond))
			for _, p := range []string{kubeadm.PhaseContainerd, kubeadm.PhaseInit, kubeadm.PhaseJoinControlPlanes, kubeadm.PhaseJoinWorkers} {
				t.Logf("%s: %s", p, phaseTime(r, p))
			}
			out, err := exec.Command(filepath.Join(cluster.BuildVersion(t, "v"+site.Version), "kubectl"), "--kubeconfig", kubeconfig, "get", "nodes", "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion} {.metadata.labels.node-role\.kubernetes\.io/control-plane}|{.spec.taints[*].key}{"\n"}{end}`).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			t.Logf("nodes:\n%s", out)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != c.hosts {
				t.Fatalf("%d nodes, want %d", len(lines), c.hosts)
			}
			for i, line := range lines {
				f := strings.Fields(line)
				if len(f) < 3 || f[0] != l.Hosts[i].Name || f[1] != "v"+site.Version {
					t.Errorf("node %d: %q", i, line)
				}
				switch c.name {
				case "ha-3-control-planes":
					if strings.Contains(line, "node-role.kubernetes.io/control-plane") {
						t.Errorf("%s keeps the control-plane taint although no host is a worker", f[0])
					}
				default:
					if !strings.HasPrefix(f[2], "containerd://1.6.") {
						t.Errorf("%s runs %s, want Debian's containerd 1.6", f[0], f[2])
					}
				}
			}
			if private != nil {
				// the login sits in files only root reads
				if got := l.SSH(t, "lab-2", "stat -c %a /etc/containerd/certs.d/registry.k8s.io/hosts.toml /etc/containerd/certs.d/"+private.Address+"/hosts.toml | sort -u"); got != "600" {
					t.Errorf("lab-2's hosts.toml files have mode %q, want 600", got)
				}
			}
			if c.name == "ha-3-control-planes" {
				for _, h := range []string{"lab-2", "lab-3"} {
					if got := l.SSH(t, h, "ls /etc/kubernetes/manifests/ | tr '\\n' ' '; ls /etc/kubernetes/gpukit/kubeadm-join.yaml 2>&1 | grep -c 'No such file'"); got != "etcd.yaml kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml 1" {
						t.Errorf("%s: %q (want the control plane's manifests, the join configuration gone)", h, got)
					}
				}
			} else if got := l.SSH(t, "lab-2", "head -n 4 /etc/containerd/config.toml | grep -c '^version = 2'"); got != "1" {
				t.Errorf("lab-2's config.toml is not version 2:\n%s", l.SSH(t, "lab-2", "cat /etc/containerd/config.toml"))
			}
			if r := runInit(t, "init", "-i", inv, "--kubeconfig-out", kubeconfig); r.code != cli.ExitOK || r.counts.Changed != 0 {
				t.Errorf("second init: exit %d %+v writes %v", r.code, r.counts, r.writeSteps())
			}
			if c.name == "ha-3-control-planes" {
				etcdLifecycle(t, l, inv, kubectlAt(t, filepath.Join(cluster.BuildVersion(t, "v"+site.Version), "kubectl"), kubeconfig))
			}
			if c.proxy {
				onFabric(t, l, kubectlAt(t, filepath.Join(cluster.BuildVersion(t, "v"+site.Version), "kubectl"), kubeconfig))
			}
			if proxied != nil { // last: it resets a host's proxy
				proxied.check(t, l, inv)
			}
		})
	}
}

// mergeContainerd joins two containerd: lines of a spec.kubernetes YAML
// into one mapping.
func mergeContainerd(kube string) string {
	var keep, fields []string
	for _, line := range strings.Split(strings.TrimRight(kube, "\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "containerd: {"); ok {
			fields = append(fields, strings.TrimSuffix(v, "}"))
			continue
		}
		keep = append(keep, line)
	}
	if len(fields) > 0 {
		keep = append(keep, "containerd: {"+strings.Join(fields, ", ")+"}")
	}
	return strings.Join(keep, "\n") + "\n"
}

// mirrorBusybox puts Debian's static busybox (from host, through the lab's
// Debian mirror) in the lab registry as an image with sh, kill and sleep,
// and returns its name: the lab's workloads that run a command.
func mirrorBusybox(t *testing.T, l *lab.Lab, host string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "busybox")
	b64 := l.SSH(t, host, "DEBIAN_FRONTEND=noninteractive apt-get -qq install -y busybox-static >/dev/null 2>&1; base64 -w0 /bin/busybox")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || os.WriteFile(bin, raw, 0o755) != nil {
		t.Fatalf("busybox from %s: %v", host, err)
	}
	const image = "docker.io/gpukit-lab/busybox:1"
	cluster.Mirror(t, l, cluster.Image{Ref: image, Upstream: image, Files: map[string]string{"/bin/busybox": bin},
		Links: map[string]string{"/bin/sh": "busybox", "/bin/kill": "busybox", "/bin/sleep": "busybox"}, Entrypoint: []string{"/bin/sh"}})
	return image
}

// hostNames are the lab's hosts.
func hostNames(l *lab.Lab) []string {
	var out []string
	for _, h := range l.Hosts {
		out = append(out, h.Name)
	}
	return out
}

// onFabric: a cluster of multi-NIC hosts runs on their node addresses (the
// fabric, eth1), though gpukit reached them on the management network: the
// nodes' InternalIP (the kubelet's --node-ip), flannel's address (its
// --iface) and the API server's advertised endpoint are fabric addresses.
func onFabric(t *testing.T, l *lab.Lab, kubectl func(...string) []byte) {
	t.Helper()
	out := string(kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.metadata.annotations.flannel\.alpha\.coreos\.com/public-ip}{"\n"}{end}`))
	fabric := map[string]string{}
	for _, h := range l.Hosts {
		fabric[h.Name] = h.Fabric
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != fabric[f[0]] || f[2] != fabric[f[0]] {
			t.Errorf("node %q: want InternalIP and flannel's public-ip %s (the fabric)", line, fabric[f[0]])
		}
	}
	if ep := strings.TrimSpace(string(kubectl("-n", "default", "get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[*].ip}"))); ep != l.Hosts[0].Fabric {
		t.Errorf("the API server advertises %q, want %s (its fabric address)", ep, l.Hosts[0].Fabric)
	}
	t.Logf("on the fabric: nodes, flannel and the API server:\n%s", out)
}

package cluster

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/lab"
)

//go:embed testdata/kubeadm-node.sh
var kubeadmNode string

// A real kubeadm cluster of two lab hosts, made by hand (no gpukit): the
// ground gpukit's kubeadm phases stand on. Each host installs kubeadm,
// kubelet and kubectl from the pkgs.k8s.io stand-in and containerd from
// Docker's repository stand-in (1.37) or from Debian (1.35: containerd 1.6),
// pulls every image from the lab registry as an air-gapped site's mirror;
// kubeadm init on lab-1, join on lab-2; both nodes become Ready and CoreDNS
// answers (its readiness needs the API through kube-proxy's ClusterIP, and
// pod networking).
func TestKubeadmByHand(t *testing.T) {
	Require(t)
	lab.Require(t)
	rt := Build(t, "runtime")
	versions := Versions(t)
	cases := []struct{ version, runtime string }{
		{versions[0], "docker"},               // the newest: containerd 2 (1.36+ refuses 1.6)
		{versions[len(versions)-1], "debian"}, // the oldest: Debian 12's containerd 1.6
	}
	for _, c := range cases {
		t.Run(c.version+"/"+c.runtime, func(t *testing.T) {
			t.Parallel()
			kubeadmByHand(t, c.version, c.runtime, rt)
		})
	}
}

func kubeadmByHand(t *testing.T, version, runtime, rt string) {
	kube := BuildVersion(t, version)
	l := lab.Start(t, lab.Options{Hosts: 2, Kube: true})
	reg := l.Registry(t)
	began := time.Now()
	images := Images(t, kube, rt)
	PushImages(t, images, func(img Image) string { return "k8s/" + img.Ref }, l.PushImage)
	t.Logf("%d images pushed in %s", len(images), time.Since(began).Round(time.Millisecond))
	pkgs := PublishPackages(t, l.LabDir(), l.Bridge, kube, rt)
	repo := reg + "/k8s"
	var sandbox string
	for _, img := range images {
		if strings.HasPrefix(img.Ref, "pause:") {
			sandbox = repo + "/" + img.Ref
		}
	}

	subnet := func(i int) string { return fmt.Sprintf("10.244.%d.0/24", i+1) }
	var wg sync.WaitGroup
	for i, h := range l.Hosts {
		var routes []string
		for j, o := range l.Hosts {
			if j != i {
				routes = append(routes, subnet(j)+" via "+o.Address)
			}
		}
		env := map[string]string{
			"K8S_REPO": pkgs.Kubernetes, "KUBE_DEB": pkgs.Versions["kubeadm"], "RUNTIME": runtime,
			"DOCKER_REPO": pkgs.Docker, "CONTAINERD_DEB": pkgs.Versions["containerd.io"],
			"REGISTRY": reg, "SANDBOX": sandbox, "NODE_IP": h.Address, "POD_SUBNET": subnet(i),
			"ROUTES": strings.Join(routes, ","),
		}
		wg.Go(func() {
			l.UseDebianMirror(t, h.Name)
			start := time.Now()
			out := runScript(t, l, h.Name, "kubeadm-node.sh", kubeadmNode, env)
			t.Logf("%s: %s (%s)", h.Name, tail(out, 1), time.Since(start).Round(time.Millisecond))
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	cp := l.Hosts[0]
	config := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: %[1]s, bindPort: 6443}
nodeRegistration: {criSocket: unix:///run/containerd/containerd.sock}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[2]s
imageRepository: %[3]s
networking: {podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
resolvConf: /etc/gpukit-lab/resolv.conf
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
conntrack: {maxPerCore: 0}
`, cp.Address, version, repo)
	// lab: cgroup v1 and the lab kernel's modules fail SystemVerification;
	// br_netfilter's sysctl is the machine's, not the host's
	ignore := "--ignore-preflight-errors=SystemVerification,FileContent--proc-sys-net-bridge-bridge-nf-call-iptables"
	// kubeadm's preflight gives containerd a few seconds to answer, which a
	// loaded 2-CPU machine running other lab tests beside this one can
	// miss (containerd 1.6 answered late once): wait until it answers.
	criReady := "for i in $(seq 60); do crictl info >/dev/null 2>&1 && break; sleep 2; done; "
	start := time.Now()
	l.SSH(t, cp.Name, criReady+"cat >/root/kubeadm.yaml <<'EOF'\n"+config+"EOF\nkubeadm init --config /root/kubeadm.yaml "+ignore+" >/root/kubeadm-init.log 2>&1 || { tail -n 30 /root/kubeadm-init.log; exit 1; }")
	t.Logf("kubeadm init on %s: %s", cp.Name, time.Since(start).Round(time.Millisecond))
	join := l.SSH(t, cp.Name, "kubeadm token create --print-join-command --ttl 10m")
	start = time.Now()
	l.SSH(t, l.Hosts[1].Name, criReady+join+" "+ignore+" >/root/kubeadm-join.log 2>&1 || { tail -n 30 /root/kubeadm-join.log; exit 1; }")
	t.Logf("kubeadm join on %s: %s", l.Hosts[1].Name, time.Since(start).Round(time.Millisecond))

	kubectl := "KUBECONFIG=/etc/kubernetes/admin.conf kubectl "
	start = time.Now()
	l.SSH(t, cp.Name, kubectl+"wait --for=condition=Ready node --all --timeout=180s >/dev/null && "+
		kubectl+"-n kube-system rollout status deployment/coredns --timeout=180s >/dev/null && "+
		kubectl+"-n kube-system rollout status daemonset/kube-proxy --timeout=120s >/dev/null || "+
		"{ "+kubectl+"get nodes -o wide; "+kubectl+"get pods -A -o wide; "+kubectl+"describe nodes | grep -A 8 Conditions:; "+
		// why a kube-proxy or CoreDNS pod ended or is not ready (CI keeps nothing else)
		"for p in $("+kubectl+"-n kube-system get pods -o name | grep -E 'kube-proxy|coredns'); do echo \"--- $p\"; "+
		kubectl+"-n kube-system logs $p --previous --tail=15 2>/dev/null || "+kubectl+"-n kube-system logs $p --tail=15; done; exit 1; }")
	t.Logf("nodes Ready, CoreDNS and kube-proxy rolled out in %s", time.Since(start).Round(time.Millisecond))

	nodes := l.SSH(t, cp.Name, kubectl+"get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}{\"\\n\"}{end}'")
	for i, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != l.Hosts[i].Name || f[1] != version || !strings.HasPrefix(f[2], "containerd://") {
			t.Errorf("node %d: %q, want %s %s containerd://...", i, line, l.Hosts[i].Name, version)
		}
	}
	// every image came from the mirror, none from the internet (there is none)
	pods := l.SSH(t, cp.Name, kubectl+"get pods -A -o jsonpath='{range .items[*]}{range .spec.containers[*]}{.image}{\"\\n\"}{end}{end}' | sort -u")
	for _, img := range strings.Fields(pods) {
		if !strings.HasPrefix(img, repo+"/") {
			t.Errorf("pod image %s is not from the lab registry %s", img, repo)
		}
	}
	// DNS from the joined node: through kube-dns' ClusterIP (kube-proxy there)
	// and to each CoreDNS pod directly (pod routes across the nodes)
	servers := "10.96.0.10 " + l.SSH(t, cp.Name, kubectl+"-n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{.items[*].status.podIP}'")
	for _, server := range strings.Fields(servers) {
		answer := l.SSH(t, l.Hosts[1].Name, "python3 - "+server+" <<'EOF'\n"+DNSQuery+"EOF")
		if answer != "10.96.0.1" {
			t.Errorf("DNS server %s answered %q for kubernetes.default.svc.cluster.local on %s, want 10.96.0.1", server, answer, l.Hosts[1].Name)
		}
	}
	held := l.SSH(t, l.Hosts[1].Name, "apt-mark showhold | sort | tr '\\n' ' '")
	if held != "kubeadm kubectl kubelet" {
		t.Errorf("held packages on %s: %q", l.Hosts[1].Name, held)
	}
}

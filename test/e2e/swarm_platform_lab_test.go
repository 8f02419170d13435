package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/dashboards"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// The platform on a swarm of lab hosts (1 manager without GPU, 2 workers
// with simulated H100s; real dockerd and swarm), every image through the
// site's registry mirror: `gpukit init` makes the swarm, then deploys the
// stacks - the real Traefik, Prometheus, node exporter and statsd
// exporter (built from Go modules), Grafana's labelled stand-in and the GPU
// simulator's DCGM exporter. Prometheus scrapes the DCGM exporter on both
// GPU workers and the statsd exporter, with node and cluster labels; a
// training line pushed from a GPU worker's container comes back from
// Prometheus, and through every query of the training dashboard; Grafana
// answers through Traefik with TLS by its host name, from the lab's
// bridge, with the generated login and gpukit's dashboards provisioned; a
// second init changes nothing; reset removes it all.
func TestLabSwarmPlatform(t *testing.T) {
	cluster.Require(t) // the images are built from Go modules (test/k8s)
	lab.Require(t)
	t.Parallel()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l := lab.Start(t, lab.Options{Hosts: 3})
	repo := gpusim.Simulate(t, l, map[string]gpusim.Hardware{
		"lab-2": {Capture: withUUID(t, h100, "GPU-5a1e0002-6c2d-4b1e-9f00-00000000c002")},
		"lab-3": {Capture: withUUID(t, h100, "GPU-5a1e0003-6c2d-4b1e-9f00-00000000c003")},
	})
	dir := t.TempDir()
	gpuInv, err := repo.Inventory(l, dir)
	if err != nil {
		t.Fatal(err)
	}
	scrape := filepath.Join(fixtures.Dir(t, "dcgm"), "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom")
	cluster.SwarmPlatformImages(t, l, gpusim.DCGMExporter(t), scrape)
	inv := filepath.Join(dir, "swarm-platform.yaml")
	if err := cluster.WriteSwarmInventory(gpuInv, inv, cluster.MirrorRegistry(t, l)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
		wg.Go(func() { l.UseDebianMirror(t, h) })
	}
	wg.Wait()
	credsFile := filepath.Join(dir, "swarm.credentials")

	began := time.Now()
	r := runInit(t, "init", "-i", inv, "--credentials-out", credsFile)
	if r.code != cli.ExitOK {
		t.Fatalf("init: exit %d %+v %v\n%s\n%s", r.code, r.counts, r.failed, r.out, l.SSH(t, "lab-1", "docker service ls; docker stack ps --no-trunc gpukit-monitoring gpukit-ingress 2>&1 | head -40"))
	}
	t.Logf("init (NVIDIA stack, docker, swarm, platform) on 3 hosts: %s; platform/ingress %s, platform/monitoring %s, platform/gpu-metrics %s, platform/training-metrics %s",
		time.Since(began).Round(100*time.Millisecond), phaseTime(r, swarmplatform.PhaseIngress), phaseTime(r, swarmplatform.PhaseMonitoring),
		phaseTime(r, swarmplatform.PhaseGPUMetrics), phaseTime(r, swarmplatform.PhaseTrainingMetrics))
	creds, err := os.ReadFile(credsFile)
	if err != nil {
		t.Fatal(err)
	}
	_, pw, ok := strings.Cut(strings.TrimSpace(string(creds)), "password ")
	if !ok || len(pw) < 24 || strings.Contains(r.out, pw) {
		t.Fatalf("Grafana's login: %q (in the output: %v)", creds, strings.Contains(r.out, pw))
	}

	t.Run("every service runs, with no virtual IP", func(t *testing.T) {
		got := l.SSH(t, "lab-1", "docker service ls --format '{{.Name}} {{.Mode}} {{.Replicas}}' | sort")
		for _, want := range []string{"gpukit-ingress_traefik global 1/1", "gpukit-monitoring_prometheus replicated 1/1", "gpukit-monitoring_grafana replicated 1/1",
			"gpukit-monitoring_node-exporter global 3/3", "gpukit-gpu-metrics_dcgm-exporter global 2/2", "gpukit-training_statsd-exporter replicated 1/1"} {
			if !strings.Contains(got, want) {
				t.Errorf("no %q among the services:\n%s", want, got)
			}
		}
		if vips := l.SSH(t, "lab-1", "docker service inspect --format '{{.Spec.EndpointSpec.Mode}}' $(docker service ls -q) | sort -u"); vips != "dnsrr" {
			t.Errorf("endpoint modes: %q", vips)
		}
	})

	t.Run("Prometheus scrapes the DCGM exporters and the statsd exporter; a training line comes back", func(t *testing.T) {
		var got []sample
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if got = promQuery(t, l, `DCGM_FI_DEV_GPU_TEMP`); len(nodesOf(got)) == 2 {
				break
			}
			time.Sleep(5 * time.Second)
		}
		if n := nodesOf(got); !slices.Equal(n, []string{"lab-2", "lab-3"}) {
			t.Fatalf("DCGM_FI_DEV_GPU_TEMP of nodes %v, want lab-2 and lab-3", n)
		}
		if m := got[0].Metric; m["cluster"] == "" || m["job"] != "dcgm-exporter" {
			t.Errorf("the DCGM exporter's samples: %v", m)
		}
		// A training loop's line from a container on GPU worker lab-3, on
		// the platform's network, to the exporter by its name (TCP: the
		// lab's busybox nc has no UDP).
		l.SSH(t, "lab-3", busyboxImage)
		line := "training.loss:0.42|g|#namespace:team-a,pod:mnist-0"
		push := "docker run --rm --network " + swarmplatform.Network + " gpukit-lab/busybox:1 sh -c " +
			shellQuote(`ip=$(nslookup statsd-exporter 127.0.0.11 | awk '/^Address: [0-9]/ {print $2}' | tail -1); echo "`+line+`" | busybox nc -w 1 $ip 9125`)
		deadline = time.Now().Add(3 * time.Minute)
		for len(got) == 0 || got[0].Metric["__name__"] != "training_loss" {
			if time.Now().After(deadline) {
				t.Fatalf("no training_loss in Prometheus after 3 minutes")
			}
			l.SSH(t, "lab-3", push+" || true")
			time.Sleep(5 * time.Second)
			got = promQuery(t, l, `training_loss`)
		}
		m := got[0].Metric
		if m["exported_namespace"] != "team-a" || m["exported_pod"] != "mnist-0" || m["job"] != "statsd-exporter" || m["cluster"] == "" || m["node"] == "" || got[0].Value[1] != "0.42" {
			t.Errorf("training_loss = %+v", got[0])
		}
		// The training dashboard's queries, every variable at All, find
		// the run.
		for _, d := range dashboards.All() {
			if d.UID != "gpukit-training" {
				continue
			}
			q := d.Panels[0].Queries[0].Expr
			for _, v := range d.Vars {
				q = strings.ReplaceAll(q, "$"+v.Name, ".*")
			}
			if res := promQuery(t, l, q); len(res) != 1 {
				t.Errorf("the training dashboard's %q finds %d series", q, len(res))
			}
		}
	})

	t.Run("Grafana through Traefik with TLS, from the lab's bridge", func(t *testing.T) {
		host := "grafana." + l.Hosts[0].Address + ".nip.io"
		crt := l.SSH(t, "lab-1", "cat "+swarmplatform.Dir+"/gpukit-ingress/ingress.crt")
		via := newIngress(l.Hosts[0].Address, host, []byte(crt))
		if resp, _ := via.get(t, "http", "/", "", ""); resp.StatusCode/100 != 3 || !strings.HasPrefix(resp.Header.Get("Location"), "https://"+host) {
			t.Errorf("http://%s/: %s, Location %q", host, resp.Status, resp.Header.Get("Location"))
		}
		resp, body := via.get(t, "https", "/api/health", "", "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Gpukit-Stand-In") != "grafana" {
			t.Fatalf("https://%s/api/health: %s %s", host, resp.Status, body)
		}
		t.Logf("https://%s/api/health through the real Traefik: %s, certificate %s", host, resp.Status, resp.TLS.PeerCertificates[0].Subject.CommonName)
		if resp, body := via.get(t, "https", "/api/search", swarmplatform.GrafanaUser, pw); resp.StatusCode != http.StatusOK ||
			!strings.Contains(body, `"title":"gpukit / GPUs"`) || !strings.Contains(body, `"title":"gpukit / Training"`) {
			t.Errorf("Grafana's dashboards with the generated login: %s %s", resp.Status, body)
		}
		if resp, _ := via.get(t, "https", "/api/user", swarmplatform.GrafanaUser, "admin"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("another password: %s, want 401", resp.Status)
		}
	})

	t.Run("status and platform status show the platform's services and Grafana's URL", func(t *testing.T) {
		code, out, errOut := run(t, "status", "-i", inv, "-o", "json", "--log-dir", t.TempDir())
		var st struct {
			Healthy  bool
			Platform *swarmplatform.Status
		}
		lastJSON(t, out, &st)
		if code != cli.ExitOK || !st.Healthy || st.Platform == nil || len(st.Platform.Services) != 6 ||
			!slices.Equal(st.Platform.URLs, []string{"https://grafana." + l.Hosts[0].Address + ".nip.io"}) {
			t.Fatalf("status: exit %d %+v\n%s", code, st.Platform, errOut)
		}
		for _, s := range st.Platform.Services {
			if !s.Running {
				t.Errorf("status: %+v", s)
			}
		}
		code, out, errOut = run(t, "platform", "status", "-i", inv, "-o", "json", "--log-dir", t.TempDir())
		var ps struct {
			Type    string
			Healthy bool
			Swarm   *swarmplatform.Status
		}
		lastJSON(t, out, &ps)
		if code != cli.ExitOK || ps.Type != "platform-status" || !ps.Healthy || ps.Swarm == nil || len(ps.Swarm.Services) != 6 {
			t.Errorf("platform status: exit %d %+v\n%s", code, ps, errOut)
		}
	})

	t.Run("a second init, and platform deploy, change nothing", func(t *testing.T) {
		began := time.Now()
		r := runInit(t, "init", "-i", inv, "--credentials-out", credsFile)
		if r.code != cli.ExitOK || r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Fatalf("second init: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
		t.Logf("second init: 0 changed in %s", time.Since(began).Round(100*time.Millisecond))
		// platform deploy alone: the same phases, through the first manager only
		r = runInit(t, "platform", "deploy", "-i", inv, "--credentials-out", credsFile)
		if r.code != cli.ExitOK || r.counts.Changed != 0 || r.counts.Unchanged != 1 || len(r.writeSteps()) != 0 {
			t.Fatalf("platform deploy on the converged swarm: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
	})

	t.Run("reset removes the platform with the swarm", func(t *testing.T) {
		r := runInit(t, "reset", "-i", inv, "--yes")
		if r.code != cli.ExitOK {
			t.Fatalf("reset: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		left := l.SSH(t, "lab-1", "docker network ls -q --filter name="+swarmplatform.Network+"; docker volume ls -q; docker config ls -q 2>/dev/null; ls "+swarmplatform.Dir+" 2>/dev/null; true")
		if left != "" {
			t.Errorf("left on lab-1 after reset: %q", left)
		}
		if r := runInit(t, "reset", "-i", inv, "--yes"); r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("second reset: exit %d %+v writes %v", r.code, r.counts, r.writeSteps())
		}
	})
}

type sample struct {
	Metric map[string]string
	Value  []any
}

// promQuery asks the platform's Prometheus on lab-1 from inside its
// task's network namespace (it publishes no port).
func promQuery(t *testing.T, l *lab.Lab, q string) []sample {
	t.Helper()
	out := l.SSH(t, "lab-1", `pid=$(docker inspect --format '{{.State.Pid}}' $(docker ps -q --filter name=gpukit-monitoring_prometheus | head -1))
nsenter -t "$pid" -n python3 -c 'import sys, urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/query?query=" + sys.argv[1], timeout=10).read().decode())' `+shellQuote(url.QueryEscape(q))+` 2>&1 || true`)
	var resp struct {
		Status string
		Data   struct{ Result []sample }
	}
	if json.Unmarshal([]byte(out), &resp) != nil || resp.Status != "success" {
		t.Logf("Prometheus on lab-1: %s", out)
		return nil
	}
	return resp.Data.Result
}

func nodesOf(samples []sample) []string {
	var out []string
	for _, s := range samples {
		out = append(out, s.Metric["node"])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// shellQuote is s in single quotes for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

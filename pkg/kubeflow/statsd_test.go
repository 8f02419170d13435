package kubeflow_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/cluster"
)

// The real statsd exporter (prometheus/statsd_exporter at the release
// StatsdImage names, built from its Go module by test/k8s/build.sh
// platform) run with the Deployment's own arguments (its addresses on
// loopback): its probes' paths answer, and the lines the README tells
// training loops to send, over UDP and TCP, come out as the metrics the
// training dashboard queries, with the pod's tags as labels (which
// Prometheus then keeps as exported_namespace and exported_pod).
func TestStatsdExporterTurnsTrainingLinesIntoTheDashboardsMetrics(t *testing.T) {
	cluster.Require(t)
	bin := filepath.Join(cluster.Build(t, "platform"), "statsd_exporter")
	c := statsdContainer(t)
	if img := c.Field("image").Value.YNode().Value; !strings.HasSuffix(img, ":"+strings.TrimSpace(readVersion(t, bin))) {
		t.Fatalf("the Deployment runs %s; the test built statsd_exporter %s", img, readVersion(t, bin))
	}
	statsd, web, log := runStatsd(t, bin, c)
	get := func(path string) (int, string) { return httpGet(t, "http://127.0.0.1:"+web+path) }
	if code, body := get("/-/healthy"); code != 200 {
		t.Errorf("/-/healthy: %d %s", code, body)
	}

	want := pushTrainingLines(t, statsd)

	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_, body = get("/metrics")
		missing := 0
		for line := range want {
			if !strings.Contains(body, "\n"+line+"\n") {
				missing++
			}
		}
		if missing == 0 {
			return
		}
	}
	for line, from := range want {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("no %q (from %s) in the exporter's metrics", line, from)
		}
	}
	t.Logf("metrics:\n%s\nlog:\n%s", grep(body, "training_"), log.String())
}

// statsdContainer is the exporter's container as the Deployment runs it.
func statsdContainer(t *testing.T) *yaml.RNode {
	t.Helper()
	objs, err := (kubeflow.Site{Cluster: "t"}).StatsdObjects()
	if err != nil {
		t.Fatal(err)
	}
	c, err := objs[0].Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name=statsd-exporter]"))
	if err != nil || c == nil {
		t.Fatalf("no statsd-exporter container: %v", err)
	}
	return c
}

// pushTrainingLines sends the README's lines: each training metric of pod
// team-a/mnist-0 over UDP, a loss of team-b/bert-1 over TCP. It returns the
// exposition lines they must become, and where each came from.
func pushTrainingLines(t *testing.T, statsd string) map[string]string {
	t.Helper()
	udp, err := net.Dial("udp", "127.0.0.1:"+statsd)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	want := map[string]string{}
	for i, m := range kubeflow.TrainingMetrics {
		v := fmt.Sprintf("0.%d5", i+1)
		if _, err := fmt.Fprintf(udp, "%s:%s|g|#namespace:team-a,pod:mnist-0", m, v); err != nil {
			t.Fatal(err)
		}
		want[strings.ReplaceAll(m, ".", "_")+`{namespace="team-a",pod="mnist-0"} `+v] = m
	}
	tcp, err := net.Dial("tcp", "127.0.0.1:"+statsd)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(tcp, "%s:3|g|#namespace:team-b,pod:bert-1\n", kubeflow.TrainingMetrics[0])
	tcp.Close()
	want[strings.ReplaceAll(kubeflow.TrainingMetrics[0], ".", "_")+`{namespace="team-b",pod="bert-1"} 3`] = "over TCP"
	return want
}

// runStatsd runs the exporter at bin with the arguments of the Deployment's
// container c, its addresses on free loopback ports, until the test ends;
// it returns once /-/ready (the readiness probe's path) answers.
func runStatsd(t *testing.T, bin string, c *yaml.RNode) (statsd, web string, log *strings.Builder) {
	t.Helper()
	statsd, web = freePort(t), freePort(t)
	argv, err := c.GetSlice("args")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range argv {
		a := a.(string)
		a = strings.Replace(a, fmt.Sprintf("=:%d", kubeflow.StatsdPort), "=127.0.0.1:"+statsd, 1)
		a = strings.Replace(a, fmt.Sprintf("=:%d", kubeflow.StatsdMetricsPort), "=127.0.0.1:"+web, 1)
		args = append(args, a)
	}
	log = &strings.Builder{}
	start(t, log, bin, args...)
	waitReady(t, "http://127.0.0.1:"+web+"/-/ready", log)
	return statsd, web, log
}

// start runs bin until the test ends, its output into log.
func start(t *testing.T, log *strings.Builder, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func waitReady(t *testing.T, url string, log *strings.Builder) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := httpGet(t, url); code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer:\n%s", url, log.String())
		}
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

func readVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	// "statsd_exporter, version 0.31.0 (branch: ...)"
	f := strings.Fields(string(out))
	if len(f) < 3 {
		t.Fatalf("--version: %s", out)
	}
	return "v" + f[2]
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

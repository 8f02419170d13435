package swarmplatform

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/pki"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/golden"
)

const invText = `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  orchestrator: swarm
  mirrors: {registry: "http://10.251.0.1:5000/mirror"}
  hosts:
    - {name: m1, address: 10.0.0.1, roles: [manager]}
    - {name: w1, address: 10.0.0.2, roles: [worker]}
`

func labInventory(t *testing.T, text string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("inv.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The stacks' compose files, as `docker stack deploy` reads them, for the
// demo's site: images through the mirror, Grafana's route, the scrape
// labels, every config and secret named by its content.
func TestStacksGolden(t *testing.T) {
	t.Parallel()
	s := SiteOf(labInventory(t, invText))
	cert, key := []byte("-----BEGIN CERTIFICATE-----\nfixed\n-----END CERTIFICATE-----\n"), []byte("-----BEGIN EC PRIVATE KEY-----\nfixed\n-----END EC PRIVATE KEY-----\n")
	ingress, err := s.ingress(cert, false, key)
	if err != nil {
		t.Fatal(err)
	}
	mon, err := s.monitoring("nodeid0123456789abcdefghi", []byte("fixed-password"), false)
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := s.gpuMetrics()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.training()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []Stack{ingress, mon, gpu, tr} {
		d, err := st.Digest()
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.Compose(Dir+"/"+st.Name, d)
		if err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, filepath.Join("testdata", st.Name+".yml"), b)
	}
	prom, err := s.prometheusConfig()
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "prometheus.yml"), prom)
	// a kept certificate names the same secrets: the stack is unchanged
	kept, err := s.ingress(cert, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ingress.Digest()
	b, _ := kept.Digest()
	if a != b || !slices.Equal(ingress.Names(), kept.Names()) {
		t.Errorf("a kept certificate changes the stack: %s %v vs %s %v", a, ingress.Names(), b, kept.Names())
	}
}

// manager simulates the first manager's docker and files for the platform
// phases: the state script's answer, stack deploys from the uploaded
// compose files (every service runs as wanted), and removal.
type manager struct {
	mu       sync.Mutex
	node     string
	files    map[string][]byte
	services map[string]string // name -> digest
	deploys  []string
	removed  int
}

func newManager() *manager {
	return &manager{node: "nodeid0123456789abcdefghi", files: map[string][]byte{}, services: map[string]string{}}
}

func (m *manager) handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range e.Uploads() {
		m.files[u.Path] = u.Content
	}
	var out strings.Builder
	switch {
	case cmd.Name == "read the platform's stacks":
		fmt.Fprintf(&out, "node=%s\n", m.node)
		for _, n := range slices.Sorted(maps.Keys(m.services)) {
			fmt.Fprintf(&out, "digest %s=%s none\nreplicas %s=1/1\n", n, m.services[n], n)
		}
		if pw, ok := m.files[Dir+"/"+passwordFile]; ok {
			sum := sha256.Sum256(pw)
			fmt.Fprintf(&out, "password.sha256=%s\n", hex.EncodeToString(sum[:]))
		}
		if c, ok := m.files[Dir+"/"+certFile]; ok {
			fmt.Fprintf(&out, "ingress.crt=%s\n", base64.StdEncoding.EncodeToString(c))
			if _, ok := m.files[Dir+"/"+certFile+".gpukit"]; ok {
				fmt.Fprintln(&out, "ingress.gpukit=yes")
			}
		}
	case strings.HasPrefix(cmd.Name, "deploy stack "):
		stack := cmd.Args[0]
		// the deploy unpacks the stack's files, as the script does
		tr := tar.NewReader(bytes.NewReader(m.files[Dir+"/"+stack+"/"+scripts.StackFiles]))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return ssh.Result{ExitCode: 1}, err
			}
			b, _ := io.ReadAll(tr)
			m.files[Dir+"/"+stack+"/"+h.Name] = b
		}
		delete(m.files, Dir+"/"+stack+"/"+scripts.StackFiles)
		var doc struct {
			Services map[string]struct {
				Deploy struct{ Labels map[string]string }
			}
		}
		if err := yaml.Unmarshal(m.files[Dir+"/"+stack+"/stack.yml"], &doc); err != nil {
			return ssh.Result{ExitCode: 1}, err
		}
		for name, svc := range doc.Services {
			m.services[stack+"_"+name] = svc.Deploy.Labels[LabelDigest]
		}
		m.deploys = append(m.deploys, stack)
	case cmd.Name == "remove the platform's stacks":
		clear(m.services)
		clear(m.files)
		m.removed++
	case strings.HasPrefix(cmd.Name, "upload "):
	default:
		return ssh.Result{ExitCode: 1, Stderr: []byte("unexpected " + cmd.Name)}, fmt.Errorf("unexpected command %q", cmd.Name)
	}
	return ssh.Result{Stdout: []byte(out.String())}, nil
}

func runPlatform(t *testing.T, inv *inventory.Inventory, m *manager, phases func(p *Platform) []engine.Phase, dryRun bool) (*engine.Summary, *Platform, *enginetest.Recorder) {
	t.Helper()
	p := New(SiteOf(inv), func(hosts []*engine.Host) []*engine.Host { return hosts[:1] })
	fleet := &enginetest.Fleet{Handler: m.handle}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "test", Phases: phases(p), Sink: rec, DryRun: dryRun}
	sum, _ := r.Run(context.Background(), inv.Machines, fleet.Dial)
	return sum, p, rec
}

// platform deploy on the first manager: the plan changes nothing; the
// first run deploys the four stacks and generates Grafana's login (in
// the credentials, never in an event); a second run changes nothing and
// keeps the certificate and the password; reset removes it all, once.
func TestPlatformPhases(t *testing.T) {
	t.Parallel()
	inv := labInventory(t, invText)
	m := newManager()
	deploy := func(p *Platform) []engine.Phase { return p.Phases() }

	status := func(p *Platform) []engine.Phase { return []engine.Phase{p.StatusPhase()} }
	if _, p, _ := runPlatform(t, inv, m, status, false); p.ReadStatus() == nil || len(p.ReadStatus().Problems()) != 4 {
		t.Fatalf("status before the deploy: %+v", p.ReadStatus())
	}

	sum, _, _ := runPlatform(t, inv, m, deploy, true)
	if c := sum.HostCounts(); c.Failed != 0 || len(m.deploys) != 0 || len(m.files) != 0 {
		t.Fatalf("dry-run: %+v, deploys %v, files %v", c, m.deploys, slices.Collect(maps.Keys(m.files)))
	}

	sum, p, rec := runPlatform(t, inv, m, deploy, false)
	if c := sum.HostCounts(); c.Changed != 1 || c.Failed != 0 {
		t.Fatalf("first run: %+v %+v", c, sum.Failed())
	}
	if want := []string{StackIngress, StackMonitoring, StackGPUMetrics, StackTraining}; !slices.Equal(m.deploys, want) {
		t.Errorf("deployed %v, want %v", m.deploys, want)
	}
	creds := p.Credentials()
	if len(creds) != 1 || creds[0].What != "Grafana" || len(creds[0].Password) < 24 {
		t.Fatalf("credentials: %+v", creds)
	}
	pw := creds[0].Password
	if !bytes.Equal(m.files[Dir+"/"+passwordFile], []byte(pw)) {
		t.Errorf("the manager's password file is not the generated password")
	}
	for _, e := range rec.Events() {
		if strings.Contains(fmt.Sprintf("%+v", e), pw) {
			t.Errorf("the password is in an event: %+v", e)
		}
	}
	for _, n := range []string{StackMonitoring + "/stack.yml", StackIngress + "/stack.yml"} {
		if bytes.Contains(m.files[Dir+"/"+n], []byte(pw)) {
			t.Errorf("%s holds the password", n)
		}
	}
	cert := m.files[Dir+"/"+certFile]

	m.deploys = nil
	sum, p, _ = runPlatform(t, inv, m, deploy, false)
	if c := sum.HostCounts(); c.Changed != 0 || c.Unchanged != 2 || len(m.deploys) != 0 || len(p.Credentials()) != 0 {
		t.Fatalf("second run: %+v, deploys %v, credentials %d", c, m.deploys, len(p.Credentials()))
	}
	if !bytes.Equal(m.files[Dir+"/"+certFile], cert) || !bytes.Equal(m.files[Dir+"/"+passwordFile], []byte(pw)) {
		t.Error("the second run replaced the certificate or the password")
	}

	// status: every service, running, and Grafana's URL
	_, p, _ = runPlatform(t, inv, m, status, false)
	if st := p.ReadStatus(); st == nil || len(st.Services) != 6 || len(st.Problems()) != 0 || !slices.Equal(st.URLs, []string{"https://grafana.10.0.0.1.nip.io"}) {
		t.Errorf("status: %+v", st)
	}

	remove := func(p *Platform) []engine.Phase { return []engine.Phase{p.Remove()} }
	if sum, _, _ = runPlatform(t, inv, m, remove, false); sum.HostCounts().Changed != 1 || m.removed != 1 {
		t.Fatalf("reset: %+v, removed %d", sum.HostCounts(), m.removed)
	}
	if sum, _, _ = runPlatform(t, inv, m, remove, false); sum.HostCounts().Changed != 0 || m.removed != 1 {
		t.Fatalf("second reset: %+v, removed %d", sum.HostCounts(), m.removed)
	}
}

// Turned-off addons deploy nothing of theirs; gpuMetrics off leaves the
// DCGM exporter out.
func TestPlatformPhasesFollowTheAddons(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addons string
		want   []string
	}{
		{"", []string{PhaseIngress, PhaseMonitoring, PhaseGPUMetrics, PhaseTrainingMetrics}},
		{"{ingress: {enabled: false}}", []string{PhaseMonitoring, PhaseGPUMetrics, PhaseTrainingMetrics}},
		{"{monitoring: {gpuMetrics: {enabled: false}}}", []string{PhaseIngress, PhaseMonitoring, PhaseTrainingMetrics}},
		{"{ingress: {enabled: false}, monitoring: {enabled: false}}", nil},
	} {
		text := invText
		if c.addons != "" {
			text = strings.Replace(text, "  hosts:", "  addons: "+c.addons+"\n  hosts:", 1)
		}
		var got []string
		for _, ph := range New(SiteOf(labInventory(t, text)), nil).Phases() {
			got = append(got, ph.Name())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("addons %s: phases %v, want %v", c.addons, got, c.want)
		}
	}
}

// The ingress certificate: gpukit's is made again when it no longer covers
// the domain; the operator's own (no gpukit mark beside it) is kept as it
// is, whatever it names.
func TestIngressCertificateKeptOrMade(t *testing.T) {
	t.Parallel()
	inv := labInventory(t, invText)
	ingress := func(p *Platform) []engine.Phase { return p.Phases()[:1] }
	other, key, err := pki.IngressCertificate("other.example", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mark bool
		made bool
	}{{"gpukit's, for another domain", true, true}, {"the operator's own", false, false}} {
		m := newManager()
		m.files[Dir+"/"+certFile], m.files[Dir+"/"+keyFile] = other, key
		if c.mark {
			m.files[Dir+"/"+certFile+".gpukit"] = []byte("gpukit")
		}
		sum, _, _ := runPlatform(t, inv, m, ingress, false)
		if sum.HostCounts().Failed != 0 {
			t.Fatalf("%s: %+v", c.name, sum.Failed())
		}
		if made := !bytes.Equal(m.files[Dir+"/"+certFile], other); made != c.made {
			t.Errorf("%s: a new certificate %v, want %v", c.name, made, c.made)
		}
	}
}

package swarmplatform

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/pki"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// The platform's phases on swarm: the Kubernetes platform's names, each
// one stack (the dashboards are the monitoring stack's Grafana's files).
const (
	PhaseIngress         = "platform/ingress"
	PhaseMonitoring      = "platform/monitoring"
	PhaseGPUMetrics      = "platform/gpu-metrics"
	PhaseTrainingMetrics = "platform/training-metrics"
	// PhaseRemove is reset's: every stack, and what they left.
	PhaseRemove = "reset/platform"
)

// DeployTimeout bounds the wait for a stack's services to run (images are
// pulled then).
const DeployTimeout = 10 * time.Minute

// params are the scripts' places.
var params = scripts.SwarmPlatformParams{Dir: Dir, Network: Network, StackLabel: LabelStack,
	PasswordFile: passwordFile, CertFile: certFile, KeyFile: keyFile, TimeoutSeconds: 300}

// Credential is a login the run generated.
type Credential struct{ What, User, Password string }

// Platform is the swarm platform's phases for a site, run on the first
// manager (target picks it).
type Platform struct {
	site   Site
	target func([]*engine.Host) []*engine.Host

	mu       sync.Mutex
	st       *state
	rendered map[string]rendered // by stack, made once per run
	creds    []Credential
	status   *Status
}

// New returns the platform of site, deployed from the host target picks.
func New(site Site, target func([]*engine.Host) []*engine.Host) *Platform {
	return &Platform{site: site, target: target}
}

// Credentials are the logins this run generated (an earlier run's are not
// read back: the file it wrote holds them).
func (p *Platform) Credentials() []Credential {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.creds)
}

// URLs are the platform's web UIs (Grafana through Traefik), for status.
func (s Site) URLs() []string {
	if h := s.grafanaHost(); h != "" && on(s.Addons.Monitoring.Enabled) {
		return []string{"https://" + h}
	}
	return nil
}

// Phases are the platform's, those the site enables.
func (p *Platform) Phases() []engine.Phase {
	var out []engine.Phase
	for _, d := range p.site.stacks() {
		out = append(out, &stackPhase{p: p, stackDef: d})
	}
	return out
}

// Remove is reset's phase: the stacks and what they left on the manager.
func (p *Platform) Remove() engine.Phase { return &removePhase{p: p} }

// state is what the manager's docker and files say of the platform.
type state struct {
	node string
	// services by swarm name: digest, update state, replicas "running/wanted"
	digest, update, replicas map[string]string
	passwordSum              string
	cert                     []byte
	// certByGpukit: the certificate is one gpukit made (its mark is
	// there); another is the operator's own, kept as it is.
	certByGpukit bool
}

func parseState(out []byte) (*state, error) {
	s := &state{digest: map[string]string{}, update: map[string]string{}, replicas: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		kind, name, _ := strings.Cut(k, " ")
		switch kind {
		case "node":
			s.node = v
		case "digest":
			d, u, _ := strings.Cut(v, " ")
			s.digest[name], s.update[name] = d, u
		case "replicas":
			s.replicas[name] = v
		case "password.sha256":
			s.passwordSum = v
		case "ingress.gpukit":
			s.certByGpukit = true
		case "ingress.crt":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("the ingress certificate: %w", err)
			}
			s.cert = b
		}
	}
	return s, sc.Err()
}

// state reads the manager once per run (a deployment reads it again).
func (p *Platform) state(ctx context.Context, h *engine.Host) (*state, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st != nil {
		return p.st, nil
	}
	cmd, err := scripts.SwarmPlatformState(params)
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the platform's stacks", cmd, engine.DataOutput())
	if err != nil {
		return nil, err
	}
	if p.st, err = parseState(res.Stdout); err != nil {
		return nil, err
	}
	return p.st, nil
}

// rendered is a stack as this run would deploy it, and the secrets made
// for it now: Grafana's password (nil: kept), a new certificate.
type rendered struct {
	stack           Stack
	digest          string
	password        []byte
	newCertificate  bool
	newGrafanaLogin bool
}

// render is the phase's stack from what the manager has, made once per
// run: ShouldRun and Run deploy the same certificate and password.
func (p *Platform) render(stack string, st *state) (rendered, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.rendered[stack]; ok {
		return r, nil
	}
	r, err := p.make(stack, st)
	if err == nil {
		if p.rendered == nil {
			p.rendered = map[string]rendered{}
		}
		p.rendered[stack] = r
	}
	return r, err
}

// make renders the stack: a kept certificate (the operator's own, or
// gpukit's while it covers the domain), a kept Grafana password, else new
// ones.
func (p *Platform) make(stack string, st *state) (r rendered, err error) {
	s := p.site
	switch stack {
	case StackIngress:
		domain := s.Addons.Ingress.Domain
		// The operator's own certificate is kept as it is; gpukit's while
		// it covers the domain a month more.
		keep := st.cert != nil && (!st.certByGpukit || domain != "" && pki.CoversDomain(st.cert, domain, time.Now()))
		cert, key := st.cert, []byte(nil)
		if !keep {
			if domain == "" {
				return r, fmt.Errorf("no ingress domain (spec.addons.ingress.domain): the certificate needs one")
			}
			if cert, key, err = pki.IngressCertificate(domain, time.Now()); err != nil {
				return r, err
			}
			r.newCertificate = true
		}
		r.stack, err = s.ingress(cert, keep, key)
	case StackMonitoring:
		keep := st.passwordSum != ""
		pw := []byte(st.passwordSum) // kept: the file's sha256, which names its secret
		if !keep {
			b := make([]byte, 24)
			if _, err := rand.Read(b); err != nil {
				return r, err
			}
			r.password = []byte(base64.RawURLEncoding.EncodeToString(b))
			pw, r.newGrafanaLogin = r.password, true
		}
		r.stack, err = s.monitoring(st.node, pw, keep)
	case StackGPUMetrics:
		r.stack, err = s.gpuMetrics()
	case StackTraining:
		r.stack, err = s.training()
	default:
		err = fmt.Errorf("no stack %s", stack)
	}
	if err == nil {
		r.digest, err = r.stack.Digest()
	}
	return r, err
}

// files is the tar of what the stack's deployment reads from its
// directory: the compose file, the names it deploys, the configs (0644)
// and secrets (0600) not kept, and the mark of a certificate gpukit made
// (an operator's own has none: it is then kept as it is).
func (r rendered) files(compose []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	err := errors.Join(add("stack.yml", 0o644, compose), add("names", 0o644, []byte(strings.Join(r.stack.Names(), "\n")+"\n")))
	for i, files := range []map[string]File{r.stack.Configs, r.stack.Secrets} {
		mode := int64(0o644)
		if i == 1 {
			mode = 0o600
		}
		for _, k := range slices.Sorted(maps.Keys(files)) {
			if f := files[k]; !f.Keep {
				err = errors.Join(err, add(k, mode, f.Content))
			}
		}
	}
	if r.newCertificate {
		err = errors.Join(err, add(path.Base(certFile)+".gpukit", 0o644,
			[]byte("gpukit made ingress.crt: replace it and ingress.key with your own and remove this file to keep yours\n")))
	}
	if err := errors.Join(err, tw.Close()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// stackPhase deploys one stack on the first manager.
type stackPhase struct {
	p *Platform
	stackDef
}

func (s *stackPhase) Name() string  { return s.phase }
func (s *stackPhase) Title() string { return s.title }
func (s *stackPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return s.p.target(hosts)
}

// converged says why the stack runs as rendered, or "" when it does not:
// every service there, with the digest, no update under way, every task
// it wants running.
func converged(r rendered, st *state) string {
	for _, svc := range r.stack.Services {
		name := serviceName(r.stack.Name, svc.Name)
		running, wanted, _ := strings.Cut(st.replicas[name], "/")
		wanted, _, _ = strings.Cut(wanted, " ")
		if st.digest[name] != r.digest || st.update[name] != "none" && st.update[name] != "completed" || running != wanted {
			return ""
		}
	}
	return fmt.Sprintf("stack %s: %d service(s) running as deployed (%s)", r.stack.Name, len(r.stack.Services), r.digest)
}

func (s *stackPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	st, err := s.p.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	if st.node == "" {
		if h.DryRun() {
			return true, "", nil // the swarm is made earlier in the run
		}
		return false, "", fmt.Errorf("%s is not a manager of a swarm (docker info names no node): the swarm phases must succeed first", h.Name())
	}
	r, err := s.p.render(s.stack, st)
	if err != nil {
		return false, "", err
	}
	if why := converged(r, st); why != "" {
		return false, why, nil
	}
	return true, "", nil
}

func (s *stackPhase) Run(ctx context.Context, h *engine.Host) error {
	st, err := s.p.state(ctx, h)
	if err != nil {
		return err
	}
	r, err := s.p.render(s.stack, st)
	if err != nil {
		return err
	}
	dir := Dir + "/" + s.stack
	compose, err := r.stack.Compose(dir, r.digest)
	if err != nil {
		return err
	}
	// The secrets first: a password only once, in a file of mode 0600.
	if r.password != nil {
		h.AddSecret(string(r.password))
	}
	// One upload of every file the stack reads, unpacked by the deploy
	// (a file each would be two round trips each).
	files, err := r.files(compose)
	if err != nil {
		return err
	}
	if err := h.Upload(ctx, "upload the files of stack "+s.stack, ssh.File{Path: dir + "/" + scripts.StackFiles, Mode: 0o600, Content: bytes.NewReader(files), Sudo: true}); err != nil {
		return err
	}
	cmd, err := scripts.SwarmStackDeploy(params, s.stack, DeployTimeout)
	if err != nil {
		return err
	}
	if _, err := h.Apply(ctx, fmt.Sprintf("deploy stack %s (%d service(s))", s.stack, len(r.stack.Services)), cmd, engine.Timeout(DeployTimeout+time.Minute)); err != nil {
		return err
	}
	if r.newGrafanaLogin && !h.DryRun() {
		s.p.mu.Lock()
		s.p.creds = append(s.p.creds, Credential{What: "Grafana", User: GrafanaUser, Password: string(r.password)})
		s.p.mu.Unlock()
	}
	return nil
}

// removePhase removes the platform from the swarm (reset).
type removePhase struct{ p *Platform }

func (*removePhase) Name() string  { return PhaseRemove }
func (*removePhase) Title() string { return "Remove the platform's stacks" }
func (r *removePhase) Targets(hosts []*engine.Host) []*engine.Host {
	return r.p.target(hosts)
}

func (r *removePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	st, err := r.p.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	if len(st.digest) == 0 && st.passwordSum == "" && st.cert == nil {
		return false, "no platform stack", nil
	}
	return true, "", nil
}

func (r *removePhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.SwarmPlatformRemove(params, Stacks)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, "remove the platform's stacks", cmd)
	return err
}

// PhaseStatus reads the platform's services (gpukit status, platform status).
const PhaseStatus = "status/platform"

// Status is the platform as the first manager's docker shows it.
type Status struct {
	Services []ServiceStatus `json:"services"`
	// Missing are the stacks the inventory asks for that have no service.
	Missing []string `json:"missing,omitempty"`
	// URLs are the web UIs (Grafana through Traefik).
	URLs []string `json:"urls,omitempty"`
}

// ServiceStatus is one of the platform's services: its tasks running of
// those it wants, and whether that is all of them.
type ServiceStatus struct {
	Name     string `json:"name"`
	Replicas string `json:"replicas"`
	Running  bool   `json:"running"`
}

// Problems are the services that do not run every task they want.
func (s *Status) Problems() []string {
	var out []string
	for _, m := range s.Missing {
		out = append(out, "platform stack "+m+" is not deployed (gpukit platform deploy)")
	}
	for _, svc := range s.Services {
		if !svc.Running {
			out = append(out, "platform service "+svc.Name+" runs "+svc.Replicas+" of its tasks")
		}
	}
	return out
}

// StatusPhase reads the platform's services on the first manager.
func (p *Platform) StatusPhase() engine.Phase { return &statusPhase{p} }

// ReadStatus is what the status phase read; nil when it did not run.
func (p *Platform) ReadStatus() *Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

type statusPhase struct{ p *Platform }

func (*statusPhase) Name() string  { return PhaseStatus }
func (*statusPhase) Title() string { return "Read the platform's services" }
func (s *statusPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return s.p.target(hosts)
}

func (s *statusPhase) Run(ctx context.Context, h *engine.Host) error {
	st, err := s.p.state(ctx, h)
	if err != nil {
		return err
	}
	out := &Status{URLs: s.p.site.URLs()}
	for _, d := range s.p.site.stacks() {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(st.replicas)), func(n string) bool { return strings.HasPrefix(n, d.stack+"_") }) {
			out.Missing = append(out.Missing, d.stack)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.replicas)) {
		r, _, _ := strings.Cut(st.replicas[name], " ")
		running, wanted, _ := strings.Cut(r, "/")
		out.Services = append(out.Services, ServiceStatus{Name: name, Replicas: r, Running: running == wanted})
	}
	s.p.mu.Lock()
	s.p.status = out
	s.p.mu.Unlock()
	return nil
}

// Package swarmplatform is the platform on a Docker swarm: Traefik, GPU
// monitoring (Prometheus, Grafana with gpukit's dashboards, node exporter,
// NVIDIA's DCGM exporter) and the statsd exporter for training metrics, as
// swarm stacks deployed through the first manager's docker, with the same
// versions (the bill of materials'), dashboards and certificate handling
// as on Kubernetes.
//
// The services run without the swarm's virtual IPs (endpoint_mode dnsrr)
// and publish their ports on their own nodes (mode host): Traefik and
// Prometheus reach the tasks' addresses on one attachable overlay network,
// so nothing depends on IPVS, which not every host has (the routing mesh
// and service VIPs need it).
package swarmplatform

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Names the stacks share.
const (
	// Network is the attachable overlay network of every platform service;
	// training jobs join it to reach the statsd exporter by name.
	Network = "gpukit-platform"
	// Dir holds, on the first manager, a directory per stack: stack.yml,
	// its configs' and secrets' files, and the names it deploys.
	Dir = "/var/lib/gpukit/platform"
	// LabelDigest labels each service with its stack's digest: a stack
	// whose services all carry the wanted one is as gpukit would deploy it.
	LabelDigest = "dev.gpukit.stack-digest"
	// LabelStack labels the configs and secrets with their stack, so that
	// a new deployment removes what it no longer names.
	LabelStack = "dev.gpukit.stack"
	// LabelScrapePort and LabelScrapeJob mark a service Prometheus scrapes:
	// the port of its metrics and the job its samples get.
	LabelScrapePort = "dev.gpukit.scrape-port"
	LabelScrapeJob  = "dev.gpukit.scrape-job"
)

// Stack is one docker stack as gpukit deploys it: its services, and the
// configs and secrets they mount, each a file gpukit uploads.
type Stack struct {
	Name     string
	Services []Service
	// Configs and Secrets by key (the compose file's); their swarm names
	// carry a digest of their content (swarm configs cannot change).
	Configs, Secrets map[string]File
}

// File is a config's or secret's content. Keep means it is already on the
// manager as it should be (a kept certificate's key, the Grafana password:
// gpukit does not read them back) and is not uploaded. Sum, when set,
// stands for the content's sha256 in its swarm name (a kept file's, or a
// key named after its certificate).
type File struct {
	Content []byte
	Keep    bool
	Sum     string
}

func (f File) sum() string {
	if f.Sum != "" {
		return f.Sum
	}
	h := sha256.Sum256(f.Content)
	return hex.EncodeToString(h[:])
}

// Service is one service of a stack, in the compose file's terms.
type Service struct {
	Name    string
	Image   string
	Command []string
	Env     map[string]string
	User    string
	// Global runs a task on every node the constraints allow; else one.
	Global      bool
	Constraints []string
	// Ports are published on the task's node (mode host): target:published.
	Ports   []Port
	Volumes []string
	// Configs and Secrets mount the stack's by key at target.
	Configs, Secrets []Mount
	Labels           map[string]string
}

// Port is a port published on the node of the task.
type Port struct {
	Target, Published int
	Protocol          string // tcp (default) or udp
}

// Mount puts a config or secret (by its key in the stack) at Target.
type Mount struct {
	Key, Target string
	Mode        int
}

// objectName is the swarm name of a stack's config or secret key: the
// stack, the key and the first 10 hex digits of its content's sha256.
func objectName(stack, key string, f File) string {
	return stack + "_" + key + "-" + f.sum()[:10]
}

// Compose is the stack's compose file for `docker stack deploy`, each
// service labelled with digest; the files' paths are dir's.
func (s Stack) Compose(dir, digest string) ([]byte, error) {
	services := map[string]any{}
	for _, svc := range s.Services {
		deploy := map[string]any{"endpoint_mode": "dnsrr", "labels": merged(svc.Labels, map[string]string{LabelDigest: digest})}
		if svc.Global {
			deploy["mode"] = "global"
		} else {
			deploy["mode"] = "replicated"
			deploy["replicas"] = 1
		}
		if len(svc.Constraints) > 0 {
			deploy["placement"] = map[string]any{"constraints": svc.Constraints}
		}
		m := map[string]any{"image": svc.Image, "deploy": deploy, "networks": []string{Network}}
		if len(svc.Command) > 0 {
			m["command"] = svc.Command
		}
		if len(svc.Env) > 0 {
			m["environment"] = svc.Env
		}
		if svc.User != "" {
			m["user"] = svc.User
		}
		var ports []any
		for _, p := range svc.Ports {
			ports = append(ports, map[string]any{"target": p.Target, "published": p.Published, "protocol": cmp.Or(p.Protocol, "tcp"), "mode": "host"})
		}
		if len(ports) > 0 {
			m["ports"] = ports
		}
		if len(svc.Volumes) > 0 {
			m["volumes"] = svc.Volumes
		}
		for kind, mounts := range map[string][]Mount{"configs": svc.Configs, "secrets": svc.Secrets} {
			var out []any
			for _, mt := range mounts {
				e := map[string]any{"source": mt.Key, "target": mt.Target}
				if mt.Mode != 0 {
					e["mode"] = mt.Mode
				}
				out = append(out, e)
			}
			if len(out) > 0 {
				m[kind] = out
			}
		}
		services[svc.Name] = m
	}
	doc := map[string]any{
		"version":  "3.8",
		"services": services,
		"networks": map[string]any{Network: map[string]any{"external": true}},
	}
	volumes := map[string]any{}
	for _, svc := range s.Services {
		for _, v := range svc.Volumes {
			if name, _, ok := strings.Cut(v, ":"); ok && !strings.HasPrefix(name, "/") {
				volumes[name] = map[string]any{}
			}
		}
	}
	if len(volumes) > 0 {
		doc["volumes"] = volumes
	}
	for kind, files := range map[string]map[string]File{"configs": s.Configs, "secrets": s.Secrets} {
		if len(files) == 0 {
			continue
		}
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(files)) {
			out[k] = map[string]any{"name": objectName(s.Name, k, files[k]), "file": dir + "/" + k, "labels": map[string]string{LabelStack: s.Name}}
		}
		doc[kind] = out
	}
	return yaml.Marshal(doc)
}

// Names are the swarm names of the stack's configs and secrets.
func (s Stack) Names() []string {
	var out []string
	for _, files := range []map[string]File{s.Configs, s.Secrets} {
		for k, f := range files {
			out = append(out, objectName(s.Name, k, f))
		}
	}
	slices.Sort(out)
	return out
}

// Digest identifies the stack as rendered: its compose file (which names
// every config and secret by its content's digest) without the label.
func (s Stack) Digest() (string, error) {
	b, err := s.Compose("", "")
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:16], nil
}

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// serviceName is the swarm's name of a stack's service.
func serviceName(stack, svc string) string { return stack + "_" + svc }

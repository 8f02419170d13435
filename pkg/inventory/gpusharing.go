package inventory

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	dp "github.com/NVIDIA/k8s-device-plugin/api/config/v1"
	"sigs.k8s.io/yaml"
)

// DevicePluginConfigLabel is the node label that picks a node's device
// plugin configuration (NVIDIA's config manager reads it).
const DevicePluginConfigLabel = "nvidia.com/device-plugin.config"

// DefaultSharingConfig names the configuration gpukit writes for nodes
// without the label when spec.kubernetes.gpuSharing.default names none.
const DefaultSharingConfig = "default"

// migStrategies are the device plugin's MIG strategies.
var migStrategies = []string{dp.MigStrategyNone, dp.MigStrategySingle, dp.MigStrategyMixed}

// MIGStrategy is the cluster's MIG strategy: the written one, else mixed
// when any host gets a MIG layout, else none.
func (c *Cluster) MIGStrategy() string {
	if s := c.Spec.Kubernetes.GPUSharing.MIGStrategy; s != "" {
		return s
	}
	n := &c.Spec.NVIDIA.MIG
	if n.Layout != "" || len(n.Rules) > 0 {
		return dp.MigStrategyMixed
	}
	for _, h := range c.Spec.Hosts {
		if h.MIG != "" {
			return dp.MigStrategyMixed
		}
	}
	return dp.MigStrategyNone
}

// DevicePluginConfigs are the device plugin's configuration files by name,
// as its chart's config.map takes them, and the default's name: each
// written with the plugin's own types and read back through them, so that
// what the plugin would refuse is refused here (the error names the
// configuration). nil when nothing differs from the plugin's defaults.
func (c *Cluster) DevicePluginConfigs() (map[string]string, string, error) {
	g := c.Spec.Kubernetes.GPUSharing
	strategy := c.MIGStrategy()
	if len(g.Configs) == 0 && strategy == dp.MigStrategyNone {
		return nil, "", nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(g.Configs)) {
		y, err := devicePluginConfig(g.Configs[name], strategy)
		if err != nil {
			return nil, "", fmt.Errorf("spec.kubernetes.gpuSharing.configs[%q]: %w", name, err)
		}
		out[name] = y
	}
	def := g.Default
	if def == "" {
		def = DefaultSharingConfig
		if _, taken := out[def]; !taken {
			y, err := devicePluginConfig(GPUSharingConfig{}, strategy)
			if err != nil {
				return nil, "", err
			}
			out[def] = y
		}
	}
	return out, def, nil
}

func devicePluginConfig(sc GPUSharingConfig, strategy string) (string, error) {
	strategy = cmp.Or(sc.MIGStrategy, strategy)
	if !slices.Contains(migStrategies, strategy) {
		return "", fmt.Errorf("unknown MIG strategy %q; expected %s, %s or %s", strategy, dp.MigStrategyNone, dp.MigStrategySingle, dp.MigStrategyMixed)
	}
	if sc.TimeSlicing != nil && sc.MPS != nil {
		return "", fmt.Errorf("timeSlicing and mps: a GPU is shared one way; give one")
	}
	cfg := dp.Config{Version: dp.Version, Flags: dp.Flags{CommandLineFlags: dp.CommandLineFlags{MigStrategy: &strategy}}}
	replicated := func(r *GPUReplicas) dp.ReplicatedResources {
		rr := dp.ReplicatedResources{RenameByDefault: r.RenameByDefault, FailRequestsGreaterThanOne: r.FailRequestsGreaterThanOne}
		names := r.Resources
		if len(names) == 0 {
			names = []string{"nvidia.com/gpu"}
		}
		for _, name := range names {
			rr.Resources = append(rr.Resources, dp.ReplicatedResource{Name: dp.ResourceName(name), Replicas: r.Replicas, Devices: dp.ReplicatedDevices{All: true}})
		}
		return rr
	}
	if sc.TimeSlicing != nil {
		cfg.Sharing.TimeSlicing = replicated(sc.TimeSlicing)
	}
	if sc.MPS != nil {
		mps := replicated(sc.MPS)
		cfg.Sharing.MPS = &mps
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	// The plugin's Sharing keeps TimeSlicing as a struct, which marshals as
	// timeSlicing: {} when unused, and which the plugin then refuses ("no
	// resources specified"); its flags marshal as nulls: written without
	// what is empty or null, as its own examples are.
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "", err
	}
	prune(m)
	if b, err = yaml.Marshal(m); err != nil {
		return "", err
	}
	// Read back as the plugin reads its file: its own checks (replicas,
	// resource names, devices) run in its types' UnmarshalJSON.
	var back dp.Config
	if err := yaml.Unmarshal(b, &back); err != nil {
		return "", fmt.Errorf("the device plugin refuses it: %w", err)
	}
	if sc.MPS != nil && back.Sharing.SharingStrategy() != dp.SharingStrategyMPS ||
		sc.TimeSlicing != nil && back.Sharing.SharingStrategy() != dp.SharingStrategyTimeSlicing {
		return "", fmt.Errorf("the device plugin would not share the GPUs as written")
	}
	return string(b), nil
}

// checkGPUSharing checks the configurations with the device plugin's
// package, and that every node's label names one.
func (c *checker) checkGPUSharing(cl *Cluster, ms []Machine) {
	g := cl.Spec.Kubernetes.GPUSharing
	const p = "spec.kubernetes.gpuSharing"
	strategy := cl.MIGStrategy()
	if !slices.Contains(migStrategies, strategy) {
		strategy = dp.MigStrategyNone // reported once below, not per configuration
	}
	for _, name := range slices.Sorted(maps.Keys(g.Configs)) {
		path := joinKey(p+".configs", name)
		if err := checkLabelValue(name); err != nil || name == "" {
			c.errorAtKey(path, "invalid configuration name %s: it is a node label's value (%v)", q(name), err)
		}
		if _, err := devicePluginConfig(g.Configs[name], strategy); err != nil {
			c.errorf(path, "%v", err)
		}
	}
	if s := g.MIGStrategy; s != "" && !slices.Contains(migStrategies, s) {
		c.errorf(p+".migStrategy", "unknown MIG strategy %s; expected none, single or mixed", q(s))
	}
	if _, ok := g.Configs[g.Default]; g.Default != "" && !ok {
		c.errorf(p+".default", "no configuration %s in %s.configs", q(g.Default), p)
	}
	for i, m := range ms {
		if v, ok := m.Labels[DevicePluginConfigLabel]; ok {
			if _, known := g.Configs[v]; !known && v != DefaultSharingConfig {
				c.errorf(joinKey(fmt.Sprintf("spec.hosts[%d].labels", c.sources[i].entry), DevicePluginConfigLabel),
					"%s: no configuration %s in %s.configs", m.Name, q(v), p)
			}
		}
	}
}

// prune drops nulls and what is empty once they are gone.
func prune(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			prune(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		} else if v == nil {
			delete(m, k)
		}
	}
}

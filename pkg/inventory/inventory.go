package inventory

import (
	"fmt"
	"strings"
)

// Inventory is a loaded and validated cluster file: the document as written
// (with defaults applied, except spec.ssh and the hosts, which stay as
// written because they are layers) and the machines it describes, one per
// host after range expansion, each with its effective SSH settings.
type Inventory struct {
	// File is the path the inventory was read from, as given.
	File     string
	Cluster  Cluster
	Machines []Machine
	// Warnings are questionable but valid choices; they never fail a load.
	Warnings []Issue
	// Site is what the inventory names on this machine, read by ReadSite.
	Site Site

	pos positions // where each field is written, for ReadSite's errors
}

// Machine is one host after range expansion, with how to reach it.
type Machine struct {
	Name    string
	Address string
	Roles   []Role
	Labels  map[string]string
	Taints  []string
	// Access is spec.ssh merged under the host's own ssh overrides, every
	// default filled in.
	Access Access
	// CUDAToolkit is set when the CUDA toolkit is installed on the host
	// (spec.nvidia.cudaToolkitRoles, or the host's cudaToolkit).
	CUDAToolkit bool
	// NodeAddress is the IP the cluster knows the host by: its entry's
	// nodeAddress, else, for a host written by DNS name, the name resolved
	// (ResolveNames); "" when Address is the IP.
	NodeAddress string
	// NvidiaDriver and CUDA are the host's own versions (its entry's
	// nvidiaDriver and cuda); "" means the cluster's (spec.versions).
	NvidiaDriver, CUDA string
	// Proxy is the host's proxy: its entry's, else spec.proxy (HTTPS
	// defaulted to HTTP). Its NoProxy is the written list only; the cluster's
	// own networks are added where it is used (Inventory.NoProxy).
	Proxy Proxy
	// MIG is the host's own MIG layout (its entry's mig); "" means the rules'
	// or spec.nvidia.mig.layout (MIGLayout).
	MIG string
	// Pos is where the host is written; every machine of a range shares
	// the position of the range's entry.
	Pos Position
}

// NodeIP is the address the cluster advertises the host by: its resolved
// NodeAddress, else its Address.
func (m Machine) NodeIP() string {
	if m.NodeAddress != "" {
		return m.NodeAddress
	}
	return m.Address
}

// DriverVersion is the NVIDIA driver the host gets: its own, else the
// cluster's.
func (m Machine) DriverVersion(spec *Spec) string {
	if m.NvidiaDriver != "" {
		return m.NvidiaDriver
	}
	return spec.Versions.NvidiaDriver
}

// MIGLayout is the MIG layout the host's GPUs get, and where it comes
// from: its own, else the first rule its labels and GPU model (gpu, the
// product name nvidia-smi gives its GPUs; "" before the host was probed
// matches no rule naming a GPU) match, else spec.nvidia.mig.layout. ""
// leaves MIG alone.
func (m Machine) MIGLayout(spec *Spec, gpu string) (layout, from string) {
	if m.MIG != "" {
		return m.MIG, "the host's mig"
	}
	for i, r := range spec.NVIDIA.MIG.Rules {
		if r.Matches(m.Labels, gpu) {
			return r.Layout, fmt.Sprintf("spec.nvidia.mig.rules[%d]", i)
		}
	}
	if l := spec.NVIDIA.MIG.Layout; l != "" {
		return l, "spec.nvidia.mig.layout"
	}
	return "", ""
}

// Matches says whether a host with these labels and GPU model is the rule's.
func (r MIGRule) Matches(labels map[string]string, gpu string) bool {
	for k, v := range r.Labels {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	return r.GPU == "" || gpu != "" && strings.Contains(strings.ToUpper(gpu), strings.ToUpper(r.GPU))
}

// CUDAVersion is the CUDA toolkit version the host gets when it gets one:
// its own, else the cluster's.
func (m Machine) CUDAVersion(spec *Spec) string {
	if m.CUDA != "" {
		return m.CUDA
	}
	return spec.Versions.CUDA
}

// HasRole reports whether the machine has role r.
func (m Machine) HasRole(r Role) bool {
	for _, have := range m.Roles {
		if have == r {
			return true
		}
	}
	return false
}

// Position is a place in an inventory file (1-based line and column).
type Position struct {
	File   string
	Line   int
	Column int
}

// Issue is one problem (or warning) found in an inventory: where, which field,
// and what is wrong or expected.
type Issue struct {
	Pos Position
	// Path is the field path, e.g. "spec.hosts[2].address".
	Path    string
	Message string
}

package ansible

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// clusterVars reads the versions and network layout. Ansible variables are
// per host; these settings are per cluster, so the value is taken where the
// converted hosts agree, and a note says when they do not.
func (c *converter) clusterVars(hosts []*mappedHost) (inventory.Versions, inventory.Network) {
	var v inventory.Versions
	var n inventory.Network

	if x, ok := c.agreed(hosts, "kube_version", "k8s_version"); ok {
		c.set("spec.versions.kubernetes", &v.Kubernetes, x, strings.TrimPrefix(x.text, "v"))
	}
	if x, ok := c.agreed(hosts, "container_manager", "container_runtime"); ok {
		switch strings.ToLower(x.text) {
		case "containerd":
			c.set("spec.versions.runtime", &v.Runtime, x, inventory.RuntimeContainerd)
		case "docker", "cri-dockerd":
			c.notes.addf(x.pos, x.subject(), "%s is not converted: Kubernetes has no Docker runtime since 1.24, gpukit uses containerd", x.text)
		default:
			c.notes.addf(x.pos, x.subject(), "container runtime %q is not supported by gpukit, which uses containerd", x.text)
		}
	}
	if x, ok := c.agreed(hosts, "containerd_version"); ok {
		c.set("spec.versions.containerRuntime", &v.ContainerRuntime, x, strings.TrimPrefix(x.text, "v"))
	}
	if x, ok := c.agreed(hosts, "nvidia_driver_version", "gpu_driver_version", "gpu_operator_driver_version",
		"nvidia_driver_package_version", "nvidia_driver_branch", "nvidia_driver_ubuntu_branch", "nvidia_driver_rhel_branch"); ok {
		c.set("spec.versions.nvidiaDriver", &v.NvidiaDriver, x, driverVersion(x.text))
	}
	if x, ok := c.agreed(hosts, "cuda_version", "cuda_toolkit_version"); ok {
		c.set("spec.versions.cuda", &v.CUDA, x, cudaVersion(x.text))
	}
	if x, ok := c.agreed(hosts, "nvidia_container_toolkit_version"); ok {
		c.set("spec.versions.containerToolkit", &v.ContainerToolkit, x, strings.TrimPrefix(x.text, "v"))
	}
	if x, ok := c.agreed(hosts, "kube_pods_subnet"); ok {
		c.setCIDR("spec.network.podCIDR", &n.PodCIDR, x)
	}
	if x, ok := c.agreed(hosts, "kube_service_addresses"); ok {
		c.setCIDR("spec.network.serviceCIDR", &n.ServiceCIDR, x)
	}
	if x, ok := c.agreed(hosts, "kube_network_plugin"); ok {
		switch p := strings.ToLower(x.text); p {
		case inventory.CNICalico, inventory.CNIFlannel, inventory.CNICilium:
			c.set("spec.network.cni", &n.CNI, x, p)
		default:
			c.notes.addf(x.pos, x.subject(), "network plugin %q is not one gpukit installs (flannel, calico, cilium); left at the default %s", x.text, inventory.DefaultCNI)
		}
	}
	return v, n
}

// agreed returns the first of keys that the converted hosts define, with the
// value from a control-plane host when hosts disagree (the control plane is
// where Kubespray reads cluster settings from).
func (c *converter) agreed(hosts []*mappedHost, keys ...string) (variable, bool) {
	ordered := make([]*mappedHost, 0, len(hosts))
	for _, m := range hosts {
		if m.roles[0] == inventory.RoleControlPlane {
			ordered = append(ordered, m)
		}
	}
	for _, m := range hosts {
		if m.roles[0] != inventory.RoleControlPlane {
			ordered = append(ordered, m)
		}
	}
	for _, key := range keys {
		var pick *variable
		var pickHost string
		differ := map[string]bool{}
		for _, m := range ordered {
			x, ok := m.vars[key]
			if !ok {
				continue
			}
			if pick == nil {
				pick, pickHost = &x, m.src.name
			} else if x.text != pick.text {
				differ[m.src.name] = true
			}
		}
		if pick == nil {
			continue
		}
		if len(differ) > 0 {
			c.notes.addf(pick.pos, "variable "+key, "differs between hosts; gpukit has one value per cluster and uses %q (from %s)", pick.text, pickHost)
		}
		if !c.usable(*pick) {
			return variable{}, false
		}
		return *pick, true
	}
	return variable{}, false
}

// set stores a converted value, noting when it had to be rewritten.
func (c *converter) set(path string, field *string, x variable, value string) {
	if value == "" {
		c.notes.addf(x.pos, x.subject(), "%q cannot be read as a version; left at gpukit's default", x.text)
		return
	}
	*field = value
	c.fromVar[path] = x
	if value != x.text {
		c.notes.addf(x.pos, x.subject(), "%q converted to %s: %s", x.text, path, value)
	}
}

func (c *converter) setCIDR(path string, field *string, x variable) {
	if _, err := netip.ParsePrefix(x.text); err != nil {
		c.notes.addf(x.pos, x.subject(), "%q is not a CIDR; left at gpukit's default", x.text)
		return
	}
	c.set(path, field, x, x.text)
}

// driverVersion reads a driver branch or release: "580", "580.95.05",
// "535.104.05-1" (a package version: the revision is dropped), "nvidia-driver-535".
var driverPattern = regexp.MustCompile(`([0-9]{3})((?:\.[0-9]{1,3}){0,2})`)

func driverVersion(s string) string {
	m := driverPattern.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

// cudaVersion reads "12.2", "12.2.1", "cuda-toolkit-12-2" (DeepOps) or
// "cuda-12-2" as major.minor, the form gpukit pins.
var cudaPattern = regexp.MustCompile(`([0-9]{1,2})[.-]([0-9]{1,2})`)

func cudaVersion(s string) string {
	m := cudaPattern.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("%s.%s", m[1], m[2])
}

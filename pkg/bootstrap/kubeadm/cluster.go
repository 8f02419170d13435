package kubeadm

import (
	"net"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
)

// ClusterOf is the part of kubeadm's configuration every node shares, from
// the inventory (validated: its values are well-formed).
func ClusterOf(inv *inventory.Inventory) Cluster {
	s := &inv.Cluster.Spec
	k := &s.Kubernetes
	c := Cluster{
		Name:     inv.Cluster.Metadata.Name,
		Version:  "v" + s.Versions.Kubernetes,
		Endpoint: endpoint(k.ControlPlaneEndpoint),
		// The registry mirror serves registry.k8s.io's images under their
		// own names (containerd's hosts.toml): no repository of its own.
		ImageRepository:       k.ImageRepository,
		PodSubnet:             s.Network.PodCIDR,
		ServiceSubnet:         s.Network.ServiceCIDR,
		CertSANs:              k.CertSANs,
		IgnorePreflightErrors: k.IgnorePreflightErrors,
		Kubelet: Kubelet{
			CgroupDriver: k.Kubelet.CgroupDriver,
			FailCgroupV1: k.Kubelet.FailCgroupV1,
			FailSwapOn:   k.Kubelet.FailSwapOn,
			ResolvConf:   k.Kubelet.ResolvConf,
			EvictionHard: k.Kubelet.EvictionHard,
		},
		KubeProxy: KubeProxy{Mode: k.KubeProxy.Mode},
	}
	if n := k.KubeProxy.ConntrackMaxPerCore; n != nil {
		v := int32(*n) // validated: 0 to 2^20
		c.KubeProxy.ConntrackMaxPerCore = &v
	}
	if c.Endpoint == "" {
		for _, m := range inv.Machines {
			if m.HasRole(inventory.RoleControlPlane) {
				c.Endpoint = net.JoinHostPort(m.Address, strconv.Itoa(APIServerPort))
				break
			}
		}
	}
	return c
}

// endpoint is host:port, with the API server's port when none is given.
func endpoint(e string) string {
	if e == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(e); err == nil {
		return e
	}
	return net.JoinHostPort(strings.Trim(e, "[]"), strconv.Itoa(APIServerPort))
}

// NodeOf is machine m's part: its address, role and taints (the inventory's,
// and the control-plane taint on control planes unless no host is a worker).
func NodeOf(inv *inventory.Inventory, m inventory.Machine) Node {
	n := Node{Name: kube.NodeName(m), Address: m.NodeIP(), ControlPlane: m.HasRole(inventory.RoleControlPlane), Taints: []Taint{}}
	for _, t := range kube.Taints(inv, m) {
		n.Taints = append(n.Taints, Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return n
}

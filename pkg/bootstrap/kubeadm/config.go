// Package kubeadm turns hosts with the NVIDIA stack into a kubeadm cluster.
// This file renders kubeadm's configuration (kubeadm.k8s.io/v1beta4, with
// the kubelet's and kube-proxy's) from typed structs: the documents kubeadm
// init and join read. The types mirror kubeadm's own field for field, for
// the fields gpukit sets: kubeadm's API lives in k8s.io/kubernetes, which
// gpukit's go.mod does not take in (the real kubeadm of every supported minor
// validates each golden case in test/cluster instead).
package kubeadm

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"

	"go.yaml.in/yaml/v3"
)

const (
	kubeadmAPI   = "kubeadm.k8s.io/v1beta4"
	kubeletAPI   = "kubelet.config.k8s.io/v1beta1"
	kubeProxyAPI = "kubeproxy.config.k8s.io/v1alpha1"
	// CRISocket is containerd's, the one runtime gpukit installs for Kubernetes.
	CRISocket = "unix:///run/containerd/containerd.sock"
	// APIServerPort is where every control plane's API server listens.
	APIServerPort = 6443
)

// typeMeta is apiVersion and kind, inlined in every document.
type typeMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

type initConfiguration struct {
	typeMeta         `yaml:",inline"`
	BootstrapTokens  []bootstrapToken `yaml:"bootstrapTokens"`
	NodeRegistration nodeRegistration `yaml:"nodeRegistration"`
	LocalAPIEndpoint apiEndpoint      `yaml:"localAPIEndpoint"`
	SkipPhases       []string         `yaml:"skipPhases,omitempty"`
}

// bootstrapToken is the token kubeadm init makes (kubeadm generates its
// secret part).
type bootstrapToken struct {
	Description string `yaml:"description"`
	TTL         string `yaml:"ttl"`
}

type clusterConfiguration struct {
	typeMeta             `yaml:",inline"`
	ClusterName          string     `yaml:"clusterName"`
	KubernetesVersion    string     `yaml:"kubernetesVersion"`
	ControlPlaneEndpoint string     `yaml:"controlPlaneEndpoint"`
	ImageRepository      string     `yaml:"imageRepository,omitempty"`
	Networking           networking `yaml:"networking"`
	APIServer            apiServer  `yaml:"apiServer,omitempty"`
}

type joinConfiguration struct {
	typeMeta         `yaml:",inline"`
	NodeRegistration nodeRegistration  `yaml:"nodeRegistration"`
	Discovery        discovery         `yaml:"discovery"`
	ControlPlane     *joinControlPlane `yaml:"controlPlane,omitempty"`
}

type nodeRegistration struct {
	Name             string `yaml:"name"`
	CRISocket        string `yaml:"criSocket"`
	KubeletExtraArgs []arg  `yaml:"kubeletExtraArgs,omitempty"`
	// Taints is never omitted: nil would make kubeadm taint a control
	// plane; an empty list is "no taints" (a single-node cluster).
	Taints                []Taint  `yaml:"taints"`
	IgnorePreflightErrors []string `yaml:"ignorePreflightErrors,omitempty"`
}

type apiEndpoint struct {
	AdvertiseAddress string `yaml:"advertiseAddress"`
	BindPort         int    `yaml:"bindPort"`
}

type networking struct {
	PodSubnet     string `yaml:"podSubnet"`
	ServiceSubnet string `yaml:"serviceSubnet"`
	DNSDomain     string `yaml:"dnsDomain,omitempty"`
}

type apiServer struct {
	CertSANs []string `yaml:"certSANs,omitempty"`
}

type discovery struct {
	BootstrapToken bootstrapTokenDiscovery `yaml:"bootstrapToken"`
}

type bootstrapTokenDiscovery struct {
	APIServerEndpoint string   `yaml:"apiServerEndpoint"`
	Token             string   `yaml:"token"`
	CACertHashes      []string `yaml:"caCertHashes"`
}

type joinControlPlane struct {
	LocalAPIEndpoint apiEndpoint `yaml:"localAPIEndpoint"`
	CertificateKey   string      `yaml:"certificateKey"`
}

type arg struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// Taint is a node taint as the Node API has it.
type Taint struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value,omitempty"`
	Effect string `yaml:"effect"`
}

type kubeletConfiguration struct {
	typeMeta     `yaml:",inline"`
	CgroupDriver string            `yaml:"cgroupDriver"`
	FailSwapOn   *bool             `yaml:"failSwapOn,omitempty"`
	FailCgroupV1 *bool             `yaml:"failCgroupV1,omitempty"`
	ResolvConf   string            `yaml:"resolvConf,omitempty"`
	EvictionHard map[string]string `yaml:"evictionHard,omitempty"`
}

type kubeProxyConfiguration struct {
	typeMeta  `yaml:",inline"`
	Mode      string     `yaml:"mode,omitempty"`
	Conntrack *conntrack `yaml:"conntrack,omitempty"`
}

type conntrack struct {
	MaxPerCore *int32 `yaml:"maxPerCore"`
}

// Cluster is what every node's configuration shares.
type Cluster struct {
	Name string
	// Version is kubeadm's kubernetesVersion, v1.37.2.
	Version string
	// Endpoint is the API's host:port every node reaches: a load balancer
	// (HA) or the first control plane.
	Endpoint string
	// ImageRepository replaces registry.k8s.io (a site's mirror); "" keeps it.
	ImageRepository          string
	PodSubnet, ServiceSubnet string
	CertSANs                 []string
	Kubelet                  Kubelet
	KubeProxy                KubeProxy
	IgnorePreflightErrors    []string
}

// Kubelet are the KubeletConfiguration fields gpukit sets.
type Kubelet struct {
	// CgroupDriver: systemd (the default: containerd is set to it too) or
	// cgroupfs (hosts whose systemd does not delegate controllers).
	CgroupDriver string
	// FailCgroupV1 false lets kubelet 1.35+ run on cgroup v1 hosts.
	FailCgroupV1 *bool
	// FailSwapOn false lets kubelet start with swap on.
	FailSwapOn *bool
	// ResolvConf is the resolver file pods' DNS forwards to ("": kubelet's
	// default, /etc/resolv.conf).
	ResolvConf string
	// EvictionHard are the hard eviction thresholds by signal (nil: the
	// kubelet's).
	EvictionHard map[string]string
}

// KubeProxy are the KubeProxyConfiguration fields gpukit sets.
type KubeProxy struct {
	// Mode: iptables, ipvs or nftables ("": kube-proxy's default).
	Mode string
	// ConntrackMaxPerCore 0 leaves nf_conntrack_max alone (hosts where it is
	// not the node's to change); nil: kube-proxy's default.
	ConntrackMaxPerCore *int32
}

// Node is one host's part.
type Node struct {
	Name string
	// Address is where its API server listens (control planes) and the
	// kubelet's --node-ip.
	Address      string
	ControlPlane bool
	Taints       []Taint
}

// checkIP: kubeadm's advertise address and the kubelet's --node-ip are IP
// addresses; a name gpukit could not resolve (a host behind a bastion) is
// refused here, before kubeadm refuses it on the host.
func (n Node) checkIP() error {
	if _, err := netip.ParseAddr(n.Address); err != nil {
		return fmt.Errorf("%s: kubeadm advertises the API server and the kubelet's node IP by IP address, and %q is not one and was not resolved (the host is reached through a bastion): write its IP in the inventory", n.Name, n.Address)
	}
	return nil
}

// Join is what a node needs to join. Token and CertificateKey are secrets:
// the rendered document goes to the host on stdin into a 0600 file.
type Join struct {
	Token          string
	CACertHashes   []string
	CertificateKey string // control planes only
}

// InitConfig is kubeadm init's configuration for the first control plane n:
// InitConfiguration, ClusterConfiguration, KubeletConfiguration and
// KubeProxyConfiguration.
func InitConfig(c Cluster, n Node) ([]byte, error) {
	if !n.ControlPlane {
		return nil, fmt.Errorf("kubeadm init runs on a control plane, not on %s", n.Name)
	}
	if err := n.checkIP(); err != nil {
		return nil, err
	}
	return documents(
		initConfiguration{
			typeMeta: typeMeta{kubeadmAPI, "InitConfiguration"},
			// kubeadm's default lives 24 hours, long after the run that
			// needed none of it (joins get a token of their own): a
			// credential left behind.
			BootstrapTokens:  []bootstrapToken{{Description: "gpukit init", TTL: initTokenTTL}},
			NodeRegistration: c.registration(n),
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: n.Address, BindPort: APIServerPort},
		},
		clusterConfiguration{
			typeMeta:             typeMeta{kubeadmAPI, "ClusterConfiguration"},
			ClusterName:          c.Name,
			KubernetesVersion:    c.Version,
			ControlPlaneEndpoint: c.Endpoint,
			ImageRepository:      c.ImageRepository,
			Networking:           networking{PodSubnet: c.PodSubnet, ServiceSubnet: c.ServiceSubnet},
			APIServer:            apiServer{CertSANs: c.CertSANs},
		},
		kubeletConfiguration{
			typeMeta:     typeMeta{kubeletAPI, "KubeletConfiguration"},
			CgroupDriver: cmp.Or(c.Kubelet.CgroupDriver, "systemd"),
			FailSwapOn:   c.Kubelet.FailSwapOn,
			FailCgroupV1: c.Kubelet.FailCgroupV1,
			ResolvConf:   c.Kubelet.ResolvConf,
			EvictionHard: c.Kubelet.EvictionHard,
		},
		c.kubeProxy(),
	)
}

// JoinConfig is kubeadm join's configuration for node n (a control plane
// joins with its own API endpoint and the certificate key).
func JoinConfig(c Cluster, n Node, j Join) ([]byte, error) {
	if err := n.checkIP(); err != nil {
		return nil, err
	}
	jc := joinConfiguration{
		typeMeta:         typeMeta{kubeadmAPI, "JoinConfiguration"},
		NodeRegistration: c.registration(n),
		Discovery: discovery{BootstrapToken: bootstrapTokenDiscovery{
			APIServerEndpoint: c.Endpoint, Token: j.Token, CACertHashes: j.CACertHashes}},
	}
	if n.ControlPlane {
		if j.CertificateKey == "" {
			return nil, fmt.Errorf("control plane %s joins with the uploaded certificates' key, and there is none", n.Name)
		}
		jc.ControlPlane = &joinControlPlane{
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: n.Address, BindPort: APIServerPort},
			CertificateKey:   j.CertificateKey,
		}
	}
	return documents(jc)
}

func (c Cluster) registration(n Node) nodeRegistration {
	taints := n.Taints
	if taints == nil {
		taints = []Taint{}
	}
	return nodeRegistration{
		Name: n.Name, CRISocket: CRISocket, Taints: taints,
		// the address the cluster reaches the node at, whatever the default
		// route says (multi-NIC hosts, hosts without one)
		KubeletExtraArgs:      []arg{{Name: "node-ip", Value: n.Address}},
		IgnorePreflightErrors: c.IgnorePreflightErrors,
	}
}

func (c Cluster) kubeProxy() kubeProxyConfiguration {
	k := kubeProxyConfiguration{typeMeta: typeMeta{kubeProxyAPI, "KubeProxyConfiguration"}, Mode: c.KubeProxy.Mode}
	if c.KubeProxy.ConntrackMaxPerCore != nil {
		k.Conntrack = &conntrack{MaxPerCore: c.KubeProxy.ConntrackMaxPerCore}
	}
	return k
}

// documents is a multi-document YAML stream of docs.
func documents(docs ...any) ([]byte, error) {
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("kubeadm configuration: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("kubeadm configuration: %w", err)
		}
	}
	return b.Bytes(), nil
}

package kubeadm

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/golden"
)

// configCase is one golden case of the rendered configuration:
// testdata/config/<Name>.yaml. test/cluster runs the real `kubeadm config
// validate` of every Kubernetes version it builds on each golden file.
type configCase struct {
	Name string
	// Render returns the documents for kubeadm.
	Render func() ([]byte, error)
}

var (
	f    = false
	zero = int32(0)
)

func configCases() []configCase {
	single := Cluster{
		Name: "lab", Version: "v1.37.2", Endpoint: "10.251.4.1:6443",
		PodSubnet: "10.244.0.0/16", ServiceSubnet: "10.96.0.0/12",
	}
	// what a lab host (cgroup v1 in systemd-nspawn, no DNS, machine-wide
	// conntrack) and an air-gapped site's mirror need
	lab := single
	lab.ImageRepository = "10.251.0.1:5000/k8s"
	lab.Kubelet = Kubelet{CgroupDriver: "cgroupfs", FailCgroupV1: &f, FailSwapOn: &f, ResolvConf: "/etc/gpukit-lab/resolv.conf",
		EvictionHard: map[string]string{"nodefs.available": "1%", "imagefs.available": "1%"}}
	lab.KubeProxy = KubeProxy{Mode: "iptables", ConntrackMaxPerCore: &zero}
	lab.IgnorePreflightErrors = []string{"SystemVerification"}
	ha := Cluster{
		Name: "prod", Version: "v1.35.4", Endpoint: "k8s-api.example.com:6443",
		PodSubnet: "10.244.0.0/16", ServiceSubnet: "10.96.0.0/12",
		CertSANs: []string{"k8s-api.example.com", "10.0.0.10"},
	}
	cpTaint := []Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"}}
	join := testJoin
	cpJoin := join
	cpJoin.CertificateKey = strings.Repeat("1b", 32)
	return []configCase{
		{"init-single", func() ([]byte, error) {
			return InitConfig(single, Node{Name: "cp-1", Address: "10.251.4.1", ControlPlane: true})
		}},
		{"init-lab", func() ([]byte, error) {
			return InitConfig(lab, Node{Name: "lab-1", Address: "10.251.4.1", ControlPlane: true, Taints: cpTaint})
		}},
		{"init-ha", func() ([]byte, error) {
			return InitConfig(ha, Node{Name: "cp-1", Address: "10.0.0.11", ControlPlane: true, Taints: cpTaint})
		}},
		{"join-worker", func() ([]byte, error) {
			return JoinConfig(lab, Node{Name: "lab-2", Address: "10.251.4.2",
				Taints: []Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}}}, join)
		}},
		{"join-control-plane", func() ([]byte, error) {
			return JoinConfig(ha, Node{Name: "cp-2", Address: "10.0.0.12", ControlPlane: true, Taints: cpTaint}, cpJoin)
		}},
	}
}

func TestConfigGolden(t *testing.T) {
	for _, c := range configCases() {
		t.Run(c.Name, func(t *testing.T) {
			got, err := c.Render()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "config", c.Name+".yaml"), got)
		})
	}
}

func TestConfigRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"init on a worker", func() error {
			_, err := InitConfig(Cluster{}, Node{Name: "w-1"})
			return err
		}, "kubeadm init runs on a control plane, not on w-1"},
		{"control plane without the certificate key", func() error {
			_, err := JoinConfig(Cluster{}, Node{Name: "cp-2", Address: "10.0.0.2", ControlPlane: true}, Join{Token: "t"})
			return err
		}, "control plane cp-2 joins with the uploaded certificates' key, and there is none"},
		{"a name no one resolved (behind a bastion)", func() error {
			_, err := InitConfig(Cluster{}, Node{Name: "cp-1", Address: "cp-1.dc.example", ControlPlane: true})
			return err
		}, `cp-1: kubeadm advertises the API server and the kubelet's node IP by IP address, and "cp-1.dc.example" is not one and was not resolved (the host is reached through a bastion): write its IP in the inventory`},
		{"a worker joining by name", func() error {
			_, err := JoinConfig(Cluster{}, Node{Name: "w-1", Address: "w-1.dc.example"}, Join{Token: "t"})
			return err
		}, `w-1: kubeadm advertises the API server and the kubelet's node IP by IP address, and "w-1.dc.example" is not one and was not resolved (the host is reached through a bastion): write its IP in the inventory`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.err(); err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// A node without taints is registered with an empty list, never nil:
// kubeadm would taint a control plane given nil (single-node clusters must
// schedule on it).
func TestNoTaintsIsAnEmptyList(t *testing.T) {
	got, err := InitConfig(Cluster{Name: "x", Version: "v1.37.2"}, Node{Name: "cp", Address: "10.0.0.1", ControlPlane: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "  taints: []\n") {
		t.Errorf("taints not an empty list:\n%s", got)
	}
}

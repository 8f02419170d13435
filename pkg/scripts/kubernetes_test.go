package scripts

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

func TestKubePackagesValidate(t *testing.T) {
	deb, _ := osfamily.Detect("debian", "12")
	rhel, _ := osfamily.Detect("rocky", "9.4")
	ok := KubePackagesParams{Family: deb, RepoURL: "https://pkgs.k8s.io/core:/stable:/v1.37/deb/", Version: "1.37.2", Key: bomKey(manifests.RepoKubernetes, "apt"),
		Packages: []string{"kubeadm", "kubelet", "kubectl"}, Extra: []string{"cri-tools"}}
	for _, c := range []struct {
		name string
		edit func(*KubePackagesParams)
		want string // "" = valid
	}{
		{"pkgs.k8s.io", func(*KubePackagesParams) {}, ""},
		{"a mirror", func(p *KubePackagesParams) {
			p.RepoURL = "http://10.251.0.1:8080/kubernetes/ab12/core:/stable:/v1.37/deb/"
		}, ""},
		{"another minor's repository", func(p *KubePackagesParams) { p.Version = "1.36.4" }, "is not of 1.36.4's minor"},
		{"no minor in the URL", func(p *KubePackagesParams) { p.RepoURL = "https://pkgs.k8s.io/" }, "want a minor's repository"},
		{"rpm repository on apt", func(p *KubePackagesParams) { p.RepoURL = "https://pkgs.k8s.io/core:/stable:/v1.37/rpm/" }, "take the deb/ repository"},
		{"deb repository on dnf", func(p *KubePackagesParams) { p.Family = rhel }, "take the rpm/ repository"},
		{"a branch for a version", func(p *KubePackagesParams) { p.Version = "1.37" }, "want X.Y.Z"},
		{"quote in the URL", func(p *KubePackagesParams) { p.RepoURL = "https://x/'core:/stable:/v1.37/deb/" }, "without credentials, query or quotes"},
		{"bad extra package", func(p *KubePackagesParams) { p.Extra = []string{"cri tools"} }, `package name "cri tools"`},
		{"no signing key", func(p *KubePackagesParams) { p.Key = manifests.SigningKey{} }, `signing key file ""`},
		{"a short key ID", func(p *KubePackagesParams) { p.Key.Fingerprints = []string{"9A296436"} }, `fingerprint "9A296436"`},
		{"a quote in a fingerprint", func(p *KubePackagesParams) { p.Key.Fingerprints = []string{"DE15B14486CD377B9E876E1A234654DA9A29643'"} }, "fingerprint"},
		{"key file outside the repository", func(p *KubePackagesParams) { p.Key.File = "../../Release.key" }, `signing key file "../../Release.key"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.edit(&p)
			_, err := KubePackages(p)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

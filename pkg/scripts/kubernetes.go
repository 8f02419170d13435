package scripts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// The Kubernetes layer's scripts (pkg/bootstrap/kubeadm decides, these
// render).
var (
	kubePrepareTemplate  = parse[NoParams]("kube-prepare.sh")
	kubePackagesTemplate = parse[KubePackagesParams]("kube-packages.sh")
)

// KubePrepare renders the node prerequisites: swap off, the overlay and
// br_netfilter modules, forwarding and bridge sysctls (the same on every
// family).
func KubePrepare() (ssh.Command, error) {
	return command("prepare for the kubelet", kubePrepareTemplate, NoParams{})
}

// kubeMinorRepo is a pkgs.k8s.io repository: .../core:/stable:/v1.37/deb/
// (or rpm/), of a minor the packages' version belongs to.
var kubeMinorRepo = regexp.MustCompile(`core:/stable:/v1\.([0-9]+)/(deb|rpm)/$`)

// KubePackagesParams install kubeadm, kubelet and kubectl from the
// Kubernetes package repository of their minor (pkgs.k8s.io or a mirror of
// it), pinned and held, and cri-tools at its newest.
type KubePackagesParams struct {
	Family osfamily.Info
	// RepoURL is the minor's repository, ending in "/":
	// https://pkgs.k8s.io/core:/stable:/v1.37/deb/ (rpm/ on dnf hosts).
	RepoURL string
	// Version is the Kubernetes release, 1.37.2: Packages are pinned to it.
	Version string
	// Packages are pinned to Version and held; Extra are held at their newest.
	Packages, Extra []string
}

// Validate checks every value that reaches the script.
func (p KubePackagesParams) Validate() error {
	if err := checkPinned(p.Family, p.Packages, p.Extra); err != nil {
		return err
	}
	if !semver.MatchString(p.Version) {
		return fmt.Errorf("kubernetes version %q: want X.Y.Z", p.Version)
	}
	if err := checkBaseURL("kubernetes repository", p.RepoURL); err != nil {
		return err
	}
	m := kubeMinorRepo.FindStringSubmatch(p.RepoURL)
	want := "deb"
	if p.Family.PackageManager == osfamily.Dnf {
		want = "rpm"
	}
	switch {
	case m == nil:
		return fmt.Errorf("kubernetes repository %q: want a minor's repository, .../core:/stable:/vX.Y/%s/", p.RepoURL, want)
	case "1."+m[1] != minorOf(p.Version):
		return fmt.Errorf("kubernetes repository %q is not of %s's minor", p.RepoURL, p.Version)
	case m[2] != want:
		return fmt.Errorf("kubernetes repository %q: %s hosts take the %s/ repository", p.RepoURL, p.Family.Name, want)
	}
	return nil
}

// minorOf is "1.37" of "1.37.2" (validated X.Y.Z).
func minorOf(v string) string {
	return v[:strings.LastIndexByte(v, '.')]
}

// KubePackages renders the Kubernetes packages' install.
func KubePackages(p KubePackagesParams) (ssh.Command, error) {
	return command("install kubeadm, kubelet and kubectl", kubePackagesTemplate, p)
}

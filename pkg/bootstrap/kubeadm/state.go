package kubeadm

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// BackupDir keeps the files as they were before gpukit first changed them;
// gpukit reset puts them back.
const BackupDir = "/var/lib/gpukit/kubernetes/originals"

// Package is an installed package.
type Package = osfamily.Package

// State is what the Kubernetes layer reads from a host (kube-state.sh).
type State struct {
	Packages map[string]Package
	// ContainerdVersion is what `containerd --version` says (v2.4.2, 1.6.20~ds1).
	ContainerdVersion string
	ContainerdActive  string
	KubeletEnabled    string
	KubeletActive     string
	// Files are containerd's config.toml and hosts.toml files, by path.
	Files map[string][]byte
	// CNIMissing are the basic CNI plugins /opt/cni/bin lacks.
	CNIMissing []string
	// APIServer: the host runs a control plane (kubeadm's static pod);
	// APIServerImage is its image (.../kube-apiserver:v1.37.2).
	APIServer      bool
	APIServerImage string
	// KubeletStale: the kubelet runs a binary an upgrade replaced.
	KubeletStale bool
	// PauseImage is the sandbox image kubeadm names ("" before kubeadm is
	// installed).
	PauseImage string
	// KubeletServer is the API the kubelet's kubeconfig names: the node
	// joined (or created) a cluster there. "" when it has none.
	KubeletServer string
}

// ParseState reads the state script's output.
func ParseState(out []byte) (*State, error) {
	s := &State{Packages: map[string]Package{}, Files: map[string][]byte{}}
	err := facts.ScanKV(out, "kubernetes state", func(key, value string) error {
		switch {
		case key == "package":
			f := strings.Fields(value)
			if len(f) != 3 {
				return fmt.Errorf("package %q: want NAME VERSION HELD", value)
			}
			s.Packages[f[0]] = Package{Version: f[1], Held: f[2] == "true"}
		case key == "containerd.version":
			s.ContainerdVersion = value
		case key == "containerd.active":
			s.ContainerdActive = value
		case key == "kubelet.enabled":
			s.KubeletEnabled = value
		case key == "kubelet.active":
			s.KubeletActive = value
		case key == "cni.missing":
			s.CNIMissing = append(s.CNIMissing, value)
		case key == "apiserver":
			s.APIServer = value == "true"
		case key == "apiserver.image":
			s.APIServerImage = value
		case key == "kubelet.stale":
			s.KubeletStale = value == "true"
		case key == "pause.image":
			s.PauseImage = value
		case key == "kubelet.server":
			s.KubeletServer = value
		case strings.HasPrefix(key, "file "):
			b, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			s.Files[strings.TrimPrefix(key, "file ")] = b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ContainerdMajor is the major of a containerd version as `containerd
// --version` prints it (v2.4.2, 1.6.20~ds1, 2.1.4-0ubuntu1), 0 if unknown.
func ContainerdMajor(v string) int {
	v = strings.TrimPrefix(v, "v")
	major, _, _ := strings.Cut(v, ".")
	n := 0
	for _, r := range major {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// credentialKeys name the values of containerd's configuration that log in
// to a registry: the CRI plugin's registry.configs."HOST".auth table (all
// of it, the username too) and the token a hosts.toml may carry.
var credentialKeys = []string{"password", "auth", "identitytoken", "token"}

// Credentials are the registry logins in containerd's files as read from a
// host (an operator's, or a site's image), for the redactor: the values of
// credentialKeys anywhere, and every value of a hosts.toml header table
// (Authorization = "Basic ..."). A file that is not TOML gives each of its
// quoted strings of eight or more characters, as those could be one.
func (s *State) Credentials() []string {
	var out []string
	for path, b := range s.Files {
		if !strings.HasSuffix(path, "/ca.crt") { // certificates: public
			out = append(out, fileCredentials(b)...)
		}
	}
	return out
}

// CredentialFiles are the files Credentials found logins in, sorted.
func (s *State) CredentialFiles() []string {
	var out []string
	for path, b := range s.Files {
		if !strings.HasSuffix(path, "/ca.crt") && len(fileCredentials(b)) > 0 {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

func fileCredentials(b []byte) []string {
	var doc map[string]any
	if _, err := toml.Decode(string(b), &doc); err != nil {
		var out []string
		for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
			if v := m[1] + m[2]; len(v) >= 8 {
				out = append(out, v)
			}
		}
		return out
	}
	return credentials(doc, false)
}

var quoted = regexp.MustCompile(`"([^"\n]*)"|'([^'\n]*)'`)

// credentials walks a decoded TOML document; all: every string is one (the
// document is a header table).
func credentials(v any, all bool) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out = append(out, credentials(x, all || slices.Contains(credentialKeys, strings.ToLower(k)) || strings.EqualFold(k, "header"))...)
		}
	case []map[string]any:
		for _, x := range v {
			out = append(out, credentials(x, all)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, credentials(x, all)...)
		}
	case string:
		if all && v != "" {
			out = append(out, v)
		}
	}
	return out
}

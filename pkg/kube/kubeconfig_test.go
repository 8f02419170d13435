package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

const adminConf = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: Q0E=}
  name: kubernetes
users:
- name: kubernetes-admin
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
contexts:
- context: {cluster: kubernetes, user: kubernetes-admin}
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
`

// --merge-kubeconfig: the cluster under its own names, made current; the
// file's other entries kept; a second merge of the same changes nothing; a
// new admin kubeconfig of the same cluster replaces its entries.
func TestMergeKubeconfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kube", "config")
	other := `apiVersion: v1
kind: Config
clusters:
- {cluster: {server: "https://192.0.2.9:6443"}, name: prod}
users:
- {name: ops, user: {token: T}}
contexts:
- {context: {cluster: prod, user: ops}, name: ops@prod}
current-context: ops@prod
`
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := MergeKubeconfig(path, "gpu-lab", []byte(adminConf))
	if err != nil || !changed {
		t.Fatalf("merge: %v %v", changed, err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "gpu-lab-admin@gpu-lab" || cfg.Contexts["gpu-lab-admin@gpu-lab"].Cluster != "gpu-lab" ||
		cfg.Clusters["gpu-lab"].Server != "https://10.0.0.1:6443" || string(cfg.AuthInfos["gpu-lab-admin"].ClientKeyData) != "KEY" {
		t.Errorf("merged: %+v", cfg)
	}
	if cfg.Clusters["prod"] == nil || cfg.Contexts["ops@prod"] == nil || cfg.AuthInfos["ops"] == nil {
		t.Errorf("the file's own entries are gone: %+v", cfg)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if changed, err := MergeKubeconfig(path, "gpu-lab", []byte(adminConf)); err != nil || changed {
		t.Errorf("second merge: changed %v, %v", changed, err)
	}
	renewed := strings.Replace(adminConf, "S0VZ", "TkVX", 1)
	if changed, err := MergeKubeconfig(path, "gpu-lab", []byte(renewed)); err != nil || !changed {
		t.Errorf("merge of renewed credentials: changed %v, %v", changed, err)
	}
	if cfg, _ := clientcmd.LoadFromFile(path); string(cfg.AuthInfos["gpu-lab-admin"].ClientKeyData) != "NEW" || len(cfg.Contexts) != 2 {
		t.Errorf("after the renewal: %+v", cfg)
	}
	if _, err := MergeKubeconfig(path, "x", []byte("current-context: nowhere\n")); err == nil {
		t.Error("an admin kubeconfig without its context merged")
	}
}

// A linked kubeconfig stays a link (its target is merged into), and a
// writer holding kubectl's lock is waited for, then named.
func TestMergeKubeconfigLinkAndLock(t *testing.T) {
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 300 * time.Millisecond
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "kubeconfig")
	link := filepath.Join(dir, "kube", "config")
	for _, d := range []string{filepath.Dir(target), filepath.Dir(link)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, link); err != nil { // dangling until the merge
		t.Fatal(err)
	}
	if changed, err := MergeKubeconfig(link, "gpu-lab", []byte(adminConf)); err != nil || !changed {
		t.Fatalf("merge through a link: %v %v", changed, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if cfg, err := clientcmd.LoadFromFile(target); err != nil || cfg.CurrentContext != "gpu-lab-admin@gpu-lab" {
		t.Errorf("the target: %+v %v", cfg, err)
	}

	// kubectl holds the lock a moment: the merge waits and goes on.
	lock := target + ".lock"
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); os.Remove(lock) }()
	renewed := strings.Replace(adminConf, "S0VZ", "TkVX", 1)
	if changed, err := MergeKubeconfig(link, "gpu-lab", []byte(renewed)); err != nil || !changed {
		t.Fatalf("merge after the lock was let go: %v %v", changed, err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("gpukit left its lock: %v", err)
	}
	// A lock nobody lets go: an error naming it, the file untouched.
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(target)
	if _, err := MergeKubeconfig(link, "gpu-lab", []byte(adminConf)); err == nil || !strings.Contains(err.Error(), lock+" exists") {
		t.Errorf("a held lock: %v", err)
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Error("the file changed under a held lock")
	}
}

// The kubeconfig is found as kubectl finds it (an explicit file, else the
// merged list, the first file's current context winning), cut down to the
// context asked for and made self-contained: a certificate file named
// relative to its kubeconfig travels inlined.
func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ca.crt", "CA-FROM-A-FILE")
	conf := func(ctx, cluster string) string {
		return "apiVersion: v1\nkind: Config\nclusters:\n- {name: " + cluster + ", cluster: {server: \"https://" + cluster + ":6443\", certificate-authority: ca.crt}}\n" +
			"users:\n- {name: u-" + ctx + ", user: {token: T}}\ncontexts:\n- {name: " + ctx + ", context: {cluster: " + cluster + ", user: u-" + ctx + "}}\ncurrent-context: " + ctx + "\n"
	}
	a, b := write("a", conf("ctx-a", "cluster-a")), write("b", conf("ctx-b", "cluster-b"))
	for _, tc := range []struct {
		name     string
		rules    clientcmd.ClientConfigLoadingRules
		context  string
		cluster  string // want; "" an error
		err      string
		notFound bool
	}{
		{name: "an explicit file", rules: clientcmd.ClientConfigLoadingRules{ExplicitPath: b, Precedence: []string{a}}, cluster: "cluster-b"},
		{name: "the merged list: the first file's current context", rules: clientcmd.ClientConfigLoadingRules{Precedence: []string{a, b}}, cluster: "cluster-a"},
		{name: "the merged list: another file's context", rules: clientcmd.ClientConfigLoadingRules{Precedence: []string{a, b}}, context: "ctx-b", cluster: "cluster-b"},
		{name: "a missing file in the list", rules: clientcmd.ClientConfigLoadingRules{Precedence: []string{filepath.Join(dir, "gone"), b}}, cluster: "cluster-b"},
		{name: "a context that is not there", rules: clientcmd.ClientConfigLoadingRules{Precedence: []string{a, b}}, context: "prod", err: `context "prod" is not in the kubeconfig (its contexts: ctx-a, ctx-b)`},
		{name: "no file", rules: clientcmd.ClientConfigLoadingRules{Precedence: []string{filepath.Join(dir, "gone")}}, err: "no kubeconfig in " + filepath.Join(dir, "gone"), notFound: true},
		{name: "a missing explicit file", rules: clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(dir, "gone")}, err: filepath.Join(dir, "gone")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&tc.rules, &clientcmd.ConfigOverrides{})
			raw, cluster, err := LoadKubeconfig(cc, tc.context)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || errors.Is(err, ErrNoKubeconfig) != tc.notFound {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cluster != tc.cluster {
				t.Fatalf("cluster %q, %v; want %q", cluster, err, tc.cluster)
			}
			cfg, err := clientcmd.Load(raw)
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.Clusters[tc.cluster]
			if len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || c == nil || string(c.CertificateAuthorityData) != "CA-FROM-A-FILE" || c.CertificateAuthority != "" {
				t.Errorf("not one self-contained context:\n%s", raw)
			}
		})
	}
}

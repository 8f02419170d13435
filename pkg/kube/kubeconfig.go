package kube

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// The kubeconfig files of the operator's machine: the one a cluster is
// reached with (--kubeconfig, --context, $KUBECONFIG), and the user's own,
// which init can merge the admin kubeconfig into (--merge-kubeconfig).

// UserKubeconfig is the kubeconfig kubectl writes to: the first file of
// $KUBECONFIG, else ~/.kube/config.
func UserKubeconfig() (string, error) {
	if list := filepath.SplitList(os.Getenv("KUBECONFIG")); len(list) > 0 && list[0] != "" {
		return list[0], nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no $KUBECONFIG and no home directory: %w", err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// MergeKubeconfig puts the cluster's admin kubeconfig into the kubeconfig
// at path under the cluster's own names (cluster NAME, user NAME-admin,
// context NAME-admin@NAME: kubeadm calls every cluster "kubernetes"), made
// the current context; the file's other clusters, users and contexts stay.
// The file is replaced whole, mode 0600. It says whether the file changed.
func MergeKubeconfig(path, name string, admin []byte) (bool, error) {
	in, err := clientcmd.Load(admin)
	if err != nil {
		return false, fmt.Errorf("the admin kubeconfig: %w", err)
	}
	ctx := in.Contexts[in.CurrentContext]
	if ctx == nil || in.Clusters[ctx.Cluster] == nil || in.AuthInfos[ctx.AuthInfo] == nil {
		return false, fmt.Errorf("the admin kubeconfig has no complete current context")
	}
	// A kubeconfig kept elsewhere and linked (dotfiles) stays a link: the
	// file it names is the one merged into.
	path = linkTarget(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	unlock, err := lockKubeconfig(path)
	if err != nil {
		return false, err
	}
	defer unlock()
	cfg := clientcmdapi.NewConfig()
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if cfg, err = clientcmd.Load(old); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	case !os.IsNotExist(err):
		return false, err
	}
	user, context := name+"-admin", name+"-admin@"+name
	cfg.Clusters[name] = in.Clusters[ctx.Cluster]
	cfg.AuthInfos[user] = in.AuthInfos[ctx.AuthInfo]
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = context
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return false, err
	}
	if string(out) == string(old) {
		return false, nil
	}
	return true, atomicfile.Write(path, out, 0o600)
}

// linkTarget follows path's symbolic links, to a file that may not exist
// yet (a dangling link is written through too).
func linkTarget(path string) string {
	for range 40 { // a loop of links: left to the write to fail on
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path
		}
		t, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(path), t)
		}
		path = t
	}
	return path
}

// lockWait bounds the wait for another writer's lock.
var lockWait = 10 * time.Second

// lockKubeconfig takes path's lock as kubectl does (client-go's
// clientcmd: path.lock, made exclusively), so that a kubectl config
// command and gpukit never write the file at once; it waits lockWait for
// one held, then names it.
func lockKubeconfig(path string) (unlock func(), err error) {
	lock := path + ".lock"
	deadline := time.Now().Add(lockWait)
	for {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(lock) }, nil
		}
		if !os.IsExist(err) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s is locked (%s exists): another kubectl or gpukit is writing it; remove the lock if none is", path, lock)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ErrNoKubeconfig is a loader that found no kubeconfig with a context in
// any file it looks at ($KUBECONFIG's, else ~/.kube/config).
var ErrNoKubeconfig = errors.New("no kubeconfig")

// ContextError is a context the kubeconfig does not have.
type ContextError struct {
	Context string
	// Have are the kubeconfig's contexts, sorted.
	Have []string
}

func (e *ContextError) Error() string {
	if e.Context == "" {
		return fmt.Sprintf("the kubeconfig has no current context (its contexts: %s)", strings.Join(e.Have, ", "))
	}
	return fmt.Sprintf("context %s is not in the kubeconfig (its contexts: %s)", safetext.Quote(e.Context), strings.Join(e.Have, ", "))
}

// LoadKubeconfig reads the kubeconfig as kubectl does - cc's loading rules:
// an explicit file, else $KUBECONFIG's colon-separated files merged (the
// first to set a value wins), else ~/.kube/config - and returns its context
// (the current one when context is "") as one self-contained kubeconfig
// (kubectl config view --minify --flatten: certificate files inlined, as
// the client is made from the bytes) and the name of the context's cluster.
func LoadKubeconfig(cc clientcmd.ClientConfig, context string) (raw []byte, cluster string, err error) {
	cfg, err := cc.RawConfig()
	if err != nil {
		return nil, "", err // names the file
	}
	if len(cfg.Contexts) == 0 {
		return nil, "", fmt.Errorf("%w in %s", ErrNoKubeconfig, strings.Join(cc.ConfigAccess().GetLoadingPrecedence(), ", "))
	}
	name := cmp.Or(context, cfg.CurrentContext)
	c, ok := cfg.Contexts[name]
	if !ok {
		return nil, "", &ContextError{Context: name, Have: slices.Sorted(maps.Keys(cfg.Contexts))}
	}
	cfg.CurrentContext = name
	if err := clientcmdapi.MinifyConfig(&cfg); err != nil {
		return nil, "", fmt.Errorf("context %s: %w", safetext.Quote(name), err)
	}
	if err := clientcmdapi.FlattenConfig(&cfg); err != nil {
		return nil, "", fmt.Errorf("context %s: %w", safetext.Quote(name), err)
	}
	raw, err = clientcmd.Write(cfg)
	if err != nil {
		return nil, "", err
	}
	return raw, c.Cluster, nil
}

// ClusterName is s as a cluster name: lowercase letters, digits and '-', at
// most 63 characters ("kubernetes-admin@kind-kind" -> "kubernetes-admin-kind-kind").
func ClusterName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	if n := strings.Trim(string(b), "-"); n != "" {
		return n
	}
	return "cluster"
}

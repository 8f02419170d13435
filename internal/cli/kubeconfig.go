package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// userKubeconfig is the kubeconfig kubectl writes to: the first file of
// $KUBECONFIG, else ~/.kube/config.
func userKubeconfig() (string, error) {
	if list := filepath.SplitList(os.Getenv("KUBECONFIG")); len(list) > 0 && list[0] != "" {
		return list[0], nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("--merge-kubeconfig: no $KUBECONFIG and no home directory: %w", err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// mergeKubeconfig puts the cluster's admin kubeconfig into the kubeconfig
// at path under the cluster's own names (cluster NAME, user NAME-admin,
// context NAME-admin@NAME: kubeadm calls every cluster "kubernetes"), made
// the current context; the file's other clusters, users and contexts stay.
// It says whether the file changed.
func mergeKubeconfig(path, name string, admin []byte) (bool, error) {
	in, err := clientcmd.Load(admin)
	if err != nil {
		return false, fmt.Errorf("the admin kubeconfig: %w", err)
	}
	ctx := in.Contexts[in.CurrentContext]
	if ctx == nil || in.Clusters[ctx.Cluster] == nil || in.AuthInfos[ctx.AuthInfo] == nil {
		return false, fmt.Errorf("the admin kubeconfig has no complete current context")
	}
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
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	return true, writePrivate(path, out)
}

// writePrivate replaces path whole with b, readable by its owner only.
func writePrivate(path string, b []byte) error { return writeWhole(path, b, 0o600) }

// writeWhole replaces path with b through a temporary file renamed over it:
// a reader sees the old content or the new, never half of it.
func writeWhole(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

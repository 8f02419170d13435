package kubeflow

import (
	"context"
	"encoding/base64"
	"fmt"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// LoginSecret keeps the Kubeflow login gpukit generated (kube-system: it
// exists before Kubeflow's namespaces, so the password is kept even when
// an apply stops half way).
const LoginSecret = "gpukit-kubeflow-login"

// dexLogin is where a release's manifests hold the default user's
// password hash: Dex's static password, its hash in the config itself
// (hash:) or in a secret's variable (hashFromEnv:, 1.10 and later).
type dexLogin struct {
	email, username string
	// set writes a hash into the objects
	set func(hash string) error
	// current reads the hash the cluster runs (nil: none yet)
	current func(ctx context.Context, cs kubernetes.Interface) ([]byte, error)
}

// findDexLogin finds the default static password of Dex in objs; false
// when the release has none (nothing to change).
func findDexLogin(objs []*yaml.RNode) (*dexLogin, bool, error) {
	var cm *yaml.RNode
	secrets := map[string]*yaml.RNode{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "dex":
			cm = o
		case o.GetKind() == "Secret":
			secrets[o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	if cm == nil {
		return nil, false, nil
	}
	data := cm.GetDataMap()
	cfg, err := yaml.Parse(data["config.yaml"])
	if err != nil {
		return nil, false, fmt.Errorf("ConfigMap %s/dex config.yaml: %w", cm.GetNamespace(), err)
	}
	first, err := cfg.Pipe(yaml.Lookup("staticPasswords", "0"))
	if err != nil || first == nil {
		return nil, false, err
	}
	str := func(f string) string {
		n, _ := first.Pipe(yaml.Get(f))
		if n == nil {
			return ""
		}
		return yaml.GetValue(n)
	}
	l := &dexLogin{email: str("email"), username: str("username")}
	ns := cm.GetNamespace()
	if env := str("hashFromEnv"); env != "" {
		for _, s := range secrets {
			if s.GetNamespace() != ns {
				continue
			}
			sd, _ := s.Pipe(yaml.Lookup("stringData", env))
			d, _ := s.Pipe(yaml.Lookup("data", env))
			if sd == nil && d == nil {
				continue
			}
			secret := s
			name := s.GetName()
			l.set = func(hash string) error {
				if d != nil {
					return secret.PipeE(yaml.Lookup("data"), yaml.SetField(env, yaml.NewStringRNode(base64.StdEncoding.EncodeToString([]byte(hash)))))
				}
				return secret.PipeE(yaml.Lookup("stringData"), yaml.SetField(env, yaml.NewStringRNode(hash)))
			}
			l.current = func(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
				live, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil, nil
				}
				if err != nil {
					return nil, err
				}
				return live.Data[env], nil
			}
			return l, true, nil
		}
		return nil, false, fmt.Errorf("Dex's default user takes its password hash from %s, which no Secret in namespace %s holds", env, ns)
	}
	l.set = func(hash string) error {
		if err := first.PipeE(yaml.SetField("hash", yaml.NewStringRNode(hash))); err != nil {
			return err
		}
		s, err := cfg.String()
		if err != nil {
			return err
		}
		data["config.yaml"] = s
		cm.SetDataMap(data)
		return nil
	}
	l.current = func(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
		live, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "dex", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		c, err := yaml.Parse(live.Data["config.yaml"])
		if err != nil {
			return nil, nil
		}
		n, _ := c.Pipe(yaml.Lookup("staticPasswords", "0", "hash"))
		if n == nil {
			return nil, nil
		}
		return []byte(yaml.GetValue(n)), nil
	}
	return l, true, nil
}

// login replaces the release's well-known default password
// (12341234) with one gpukit generates, kept in LoginSecret and shown once.
// The hash the cluster runs is kept while it matches the password, so that
// a second deploy changes nothing (bcrypt salts every hash anew). save,
// when not nil, keeps a newly generated password: it runs before the apply.
func (p *Platform) login(ctx context.Context, h *engine.Host, objs []*yaml.RNode) (save func(context.Context) error, err error) {
	l, ok, err := findDexLogin(objs)
	if err != nil || !ok {
		return nil, err
	}
	cs, err := p.clientset(ctx, h)
	if err != nil {
		return nil, err
	}
	var pw string
	if cs != nil {
		s, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, LoginSecret, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			pw = string(s.Data["password"])
		}
	}
	generated := pw == ""
	if generated {
		if pw, err = password(); err != nil {
			return nil, err
		}
	}
	h.AddSecret(pw)
	var hash []byte
	if cs != nil && !generated {
		cur, err := l.current(ctx, cs)
		if err != nil {
			return nil, err
		}
		if cur != nil && bcrypt.CompareHashAndPassword(cur, []byte(pw)) == nil {
			hash = cur
		}
	}
	if hash == nil {
		if hash, err = bcrypt.GenerateFromPassword([]byte(pw), 12); err != nil {
			return nil, err
		}
	}
	if err := l.set(string(hash)); err != nil {
		return nil, err
	}
	if !generated {
		return nil, nil
	}
	return func(ctx context.Context) error {
		return h.WriteAPI(ctx, "generate Kubeflow's login", "Secret "+metav1.NamespaceSystem+"/"+LoginSecret+" with a generated password for "+l.email, func(ctx context.Context) error {
			cs, err := p.clientset(ctx, h)
			if err != nil {
				return err
			}
			_, err = cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: LoginSecret, Labels: ownLabels()},
				StringData: map[string]string{"username": l.email, "password": pw},
			}, metav1.CreateOptions{FieldManager: kube.FieldManager})
			if err == nil {
				p.remember(h, "Kubeflow", l.email, pw)
			}
			return err
		})
	}, nil
}

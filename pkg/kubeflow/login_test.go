package kubeflow

import (
	"encoding/base64"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// Dex's default user in the shapes releases ship it: the hash in a secret
// variable (hashFromEnv, as stringData or data) or in the config itself.
func TestFindDexLogin(t *testing.T) {
	const cm = `apiVersion: v1
kind: ConfigMap
metadata: {name: dex, namespace: auth}
data:
  config.yaml: |
    issuer: http://dex.auth.svc.cluster.local:5556/dex
    staticPasswords:
    - email: user@example.com
      %s
      username: user
`
	for _, tc := range []struct {
		name, objs, want string
	}{
		{"hashFromEnv in stringData", strings.Replace(cm, "%s", "hashFromEnv: DEX_USER_PASSWORD", 1) +
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: dex-passwords, namespace: auth}\nstringData:\n  DEX_USER_PASSWORD: $2y$12$default\n", "DEX_USER_PASSWORD: NEWHASH"},
		{"hashFromEnv in data", strings.Replace(cm, "%s", "hashFromEnv: DEX_USER_PASSWORD", 1) +
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: dex-passwords, namespace: auth}\ndata:\n  DEX_USER_PASSWORD: JDJ5\n", "DEX_USER_PASSWORD: " + base64.StdEncoding.EncodeToString([]byte("NEWHASH"))},
		{"hash in the config", strings.Replace(cm, "%s", "hash: $2y$12$default", 1), "hash: NEWHASH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := kio.FromBytes([]byte(tc.objs))
			if err != nil {
				t.Fatal(err)
			}
			l, ok, err := findDexLogin(objs)
			if err != nil || !ok || l.email != "user@example.com" {
				t.Fatalf("%+v %v %v", l, ok, err)
			}
			if err := l.set("NEWHASH"); err != nil {
				t.Fatal(err)
			}
			out, _ := kio.StringAll(objs)
			if !strings.Contains(out, tc.want) || strings.Contains(out, "default") {
				t.Errorf("after set:\n%s\nwant %q", out, tc.want)
			}
		})
	}
	objs, _ := kio.FromBytes([]byte(strings.Replace(cm, "%s", "hashFromEnv: NOWHERE", 1)))
	if _, _, err := findDexLogin(objs); err == nil || !strings.Contains(err.Error(), "NOWHERE, which no Secret in namespace auth holds") {
		t.Errorf("a variable no secret holds: %v", err)
	}
}

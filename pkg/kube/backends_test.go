package kube

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

const backendsYAML = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: hook}
webhooks:
- name: validate.example.org
  clientConfig: {service: {namespace: web, name: hook-svc, path: /validate}}
- name: by-url.example.org
  clientConfig: {url: "https://outside.example.org/"}
---
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: Service
metadata: {name: hook-svc, namespace: web}
spec: {selector: {app: hook}}
---
apiVersion: v1
kind: Service
metadata: {name: other-svc, namespace: web}
spec: {selector: {app: other}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: hook-sa, namespace: web}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: hook-sa, namespace: elsewhere}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: hook-config, namespace: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: projected-ca, namespace: web}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-env, namespace: web}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-certs, namespace: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: web}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: hook-role, namespace: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: hook, namespace: web}
spec:
  selector: {matchLabels: {app: hook}}
  template:
    metadata: {labels: {app: hook, tier: admission}}
    spec:
      serviceAccountName: hook-sa
      volumes:
      - {name: config, configMap: {name: hook-config}}
      - {name: certs, secret: {secretName: hook-certs}}
      - name: ca
        projected: {sources: [{configMap: {name: projected-ca}}]}
      containers:
      - name: server
        envFrom: [{secretRef: {name: hook-env}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: web}
spec:
  template:
    metadata: {labels: {app: other}}
    spec: {serviceAccountName: other-sa}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: hook, namespace: elsewhere}
spec:
  template:
    metadata: {labels: {app: hook}}
    spec: {serviceAccountName: hook-sa}
`

func TestStagesPutWebhookBackendsFirst(t *testing.T) {
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(backendsYAML)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	st, err := stagesOf(nodes)
	if err != nil {
		t.Fatal(err)
	}
	names := func(s stage) (deps, after []string) {
		for _, u := range s.objs {
			deps = append(deps, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}
		for _, u := range s.after {
			after = append(after, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}
		return deps, after
	}
	want := map[int][2][]string{
		stageNamespaces: {{"Namespace /web"}},
		// The called service, what its Deployment's pods refer to; the Deployment after them.
		stageBackends: {{"Service web/hook-svc", "ServiceAccount web/hook-sa", "ConfigMap web/hook-config",
			"ConfigMap web/projected-ca", "Secret web/hook-env", "Secret web/hook-certs"}, {"Deployment web/hook"}},
		// Same names in another namespace, services no webhook calls, RBAC: with the rest.
		stageObjects: {{"Service web/other-svc", "ServiceAccount elsewhere/hook-sa", "ConfigMap web/unrelated",
			"Role web/hook-role", "Deployment web/other", "Deployment elsewhere/hook"}},
		stageWebhooks: {{"ValidatingWebhookConfiguration /hook"}},
	}
	for i, s := range st {
		deps, after := names(s)
		w := want[i]
		if !slices.Equal(deps, w[0]) || !slices.Equal(after, w[1]) {
			t.Errorf("stage %s:\n got %q then %q\nwant %q then %q", s.name, deps, after, w[0], w[1])
		}
	}
}

func TestStagesWithoutWebhooks(t *testing.T) {
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: web}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: web}
`)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	st, err := stagesOf(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(st[stageBackends].objs)+len(st[stageBackends].after) != 0 || len(st[stageObjects].objs) != 2 {
		t.Errorf("no webhook: backends %d+%d objects, objects %d; want everything in objects",
			len(st[stageBackends].objs), len(st[stageBackends].after), len(st[stageObjects].objs))
	}
}

// toUnstructured must give what kyaml's MarshalJSON gives (the way it went
// before), for the YAML that manifests hold.
func TestToUnstructuredAsMarshalJSON(t *testing.T) {
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: odd
  labels: &l {app: x, "on": "yes"}
  annotations: {when: 2024-01-02T03:04:05Z, day: 2024-01-02, n: "007"}
data:
  int: 42
  big: 12345678901234
  float: 1.5
  exp: 1e3
  "null": null
  bool: true
  yes: yes
  hex: 0x1F
  octal: 0o17
  empty: {}
  list: [1, "2", 3.0, ~, false]
  block: |
    line one
      line two
  folded: >
    a
    b
  alias: *l
  merge:
    <<: {a: 1}
    b: 2
`)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		var got, want unstructured.Unstructured
		if err := toUnstructured(n, &got); err != nil {
			t.Fatal(err)
		}
		b, err := n.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want.Object); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("toUnstructured:\n got %v\nwant %v", got.Object, want.Object)
		}
	}
}

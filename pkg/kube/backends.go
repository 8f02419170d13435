package kube

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// webhookBackends takes out of objects what the webhook configurations
// among hooks call: the Services they name, the Deployments whose pods
// those Services select, and what those pods need to be created and to
// start (service accounts, config maps, secrets). The webhook stage waits
// for those Deployments to be Available, and the controller manager works
// through new Deployments a few a second (its client's rate limit): applied
// first, among hundreds of objects, the backends are Available by the time
// the rest is applied, instead of last. deps are applied before deploys so
// that no pod is refused for a service account not created yet (its
// ReplicaSet would back off for seconds).
func webhookBackends(objects, hooks []*unstructured.Unstructured) (deps, deploys, rest []*unstructured.Unstructured) {
	services := map[string]bool{} // namespace/name
	for _, h := range hooks {
		webhooks, _, _ := unstructured.NestedSlice(h.Object, "webhooks")
		for _, w := range webhooks {
			wm, _ := w.(map[string]any)
			ns, _, _ := unstructured.NestedString(wm, "clientConfig", "service", "namespace")
			name, _, _ := unstructured.NestedString(wm, "clientConfig", "service", "name")
			if name != "" {
				services[ns+"/"+name] = true
			}
		}
	}
	if len(services) == 0 {
		return nil, nil, objects
	}
	key := func(u *unstructured.Unstructured) string { return u.GetNamespace() + "/" + u.GetName() }
	backend := map[*unstructured.Unstructured]bool{}
	var selectors []struct {
		ns  string
		sel map[string]string
	}
	for _, u := range objects {
		if u.GetKind() != "Service" || u.GroupVersionKind().Group != "" || !services[key(u)] {
			continue
		}
		backend[u] = true
		if sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector"); len(sel) > 0 {
			selectors = append(selectors, struct {
				ns  string
				sel map[string]string
			}{u.GetNamespace(), sel})
		}
	}
	needs := map[string]bool{} // kind namespace/name
	for _, u := range objects {
		if u.GetKind() != "Deployment" || u.GroupVersionKind().Group != "apps" {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
		for _, s := range selectors {
			if s.ns == u.GetNamespace() && selects(s.sel, labels) {
				backend[u] = true
				podNeeds(u, needs)
				break
			}
		}
	}
	for _, u := range objects {
		switch {
		case u.GetKind() == "Deployment" && backend[u]:
			deploys = append(deploys, u)
		case backend[u], u.GroupVersionKind().Group == "" && needs[u.GetKind()+" "+key(u)]:
			deps = append(deps, u)
		default:
			rest = append(rest, u)
		}
	}
	return deps, deploys, rest
}

// podNeeds adds to needs what the pods of Deployment d refer to by name in
// its namespace: "ServiceAccount ns/name", "ConfigMap ns/name", "Secret ns/name".
func podNeeds(d *unstructured.Unstructured, needs map[string]bool) {
	ns := d.GetNamespace()
	add := func(kind, name string) {
		if name != "" {
			needs[kind+" "+ns+"/"+name] = true
		}
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if sa, _, _ := unstructured.NestedString(spec, "serviceAccountName"); sa != "" {
		add("ServiceAccount", sa)
	} else {
		sa, _, _ := unstructured.NestedString(spec, "serviceAccount")
		add("ServiceAccount", sa)
	}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range vols {
		vm, _ := v.(map[string]any)
		name, _, _ := unstructured.NestedString(vm, "configMap", "name")
		add("ConfigMap", name)
		name, _, _ = unstructured.NestedString(vm, "secret", "secretName")
		add("Secret", name)
		sources, _, _ := unstructured.NestedSlice(vm, "projected", "sources")
		for _, src := range sources {
			sm, _ := src.(map[string]any)
			name, _, _ := unstructured.NestedString(sm, "configMap", "name")
			add("ConfigMap", name)
			name, _, _ = unstructured.NestedString(sm, "secret", "name")
			add("Secret", name)
		}
	}
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(spec, field)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			env, _, _ := unstructured.NestedSlice(cm, "env")
			for _, e := range env {
				em, _ := e.(map[string]any)
				name, _, _ := unstructured.NestedString(em, "valueFrom", "configMapKeyRef", "name")
				add("ConfigMap", name)
				name, _, _ = unstructured.NestedString(em, "valueFrom", "secretKeyRef", "name")
				add("Secret", name)
			}
			from, _, _ := unstructured.NestedSlice(cm, "envFrom")
			for _, f := range from {
				fm, _ := f.(map[string]any)
				name, _, _ := unstructured.NestedString(fm, "configMapRef", "name")
				add("ConfigMap", name)
				name, _, _ = unstructured.NestedString(fm, "secretRef", "name")
				add("Secret", name)
			}
		}
	}
}

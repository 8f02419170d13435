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
		for _, w := range webhooksOf(h) {
			if w.service != "" {
				services[w.namespace+"/"+w.service] = true
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

// webhook is one webhook of a webhook configuration and what it calls: a
// service in the cluster, or a URL.
type webhook struct {
	name, namespace, service, url string
}

// webhooksOf lists the webhooks of a Validating- or
// MutatingWebhookConfiguration.
func webhooksOf(c *unstructured.Unstructured) []webhook {
	list, _, _ := unstructured.NestedSlice(c.Object, "webhooks")
	out := make([]webhook, 0, len(list))
	for _, w := range list {
		wm, _ := w.(map[string]any)
		var h webhook
		h.name, _ = wm["name"].(string)
		h.namespace, _, _ = unstructured.NestedString(wm, "clientConfig", "service", "namespace")
		h.service, _, _ = unstructured.NestedString(wm, "clientConfig", "service", "name")
		h.url, _, _ = unstructured.NestedString(wm, "clientConfig", "url")
		out = append(out, h)
	}
	return out
}

// podNeeds adds to needs what the pods of Deployment d refer to by name in
// its namespace: "ServiceAccount ns/name", "ConfigMap ns/name", "Secret ns/name".
func podNeeds(d *unstructured.Unstructured, needs map[string]bool) {
	// ref adds the object of kind named at path in m, if it names one.
	ref := func(m map[string]any, kind string, path ...string) {
		if name, _, _ := unstructured.NestedString(m, path...); name != "" {
			needs[kind+" "+d.GetNamespace()+"/"+name] = true
		}
	}
	// each calls fn with every map of the list at path in m.
	each := func(m map[string]any, fn func(map[string]any), path ...string) {
		list, _, _ := unstructured.NestedSlice(m, path...)
		for _, v := range list {
			if vm, ok := v.(map[string]any); ok {
				fn(vm)
			}
		}
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	sa := "serviceAccountName"
	if name, _, _ := unstructured.NestedString(spec, sa); name == "" {
		sa = "serviceAccount" // its deprecated spelling
	}
	ref(spec, "ServiceAccount", sa)
	each(spec, func(v map[string]any) {
		ref(v, "ConfigMap", "configMap", "name")
		ref(v, "Secret", "secret", "secretName")
		each(v, func(src map[string]any) {
			ref(src, "ConfigMap", "configMap", "name")
			ref(src, "Secret", "secret", "name")
		}, "projected", "sources")
	}, "volumes")
	for _, field := range []string{"initContainers", "containers"} {
		each(spec, func(c map[string]any) {
			each(c, func(e map[string]any) {
				ref(e, "ConfigMap", "valueFrom", "configMapKeyRef", "name")
				ref(e, "Secret", "valueFrom", "secretKeyRef", "name")
			}, "env")
			each(c, func(f map[string]any) {
				ref(f, "ConfigMap", "configMapRef", "name")
				ref(f, "Secret", "secretRef", "name")
			}, "envFrom")
		}, field)
	}
}

package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/safe"
)

// FieldManager owns the fields gpukit applies (server-side apply).
const FieldManager = "gpukit"

// ApplyOptions bound the waits of Apply.
type ApplyOptions struct {
	// Timeout bounds each wait: a CRD to be Established, a webhook's
	// backend to be Available. Default 5 minutes.
	Timeout time.Duration
	// Parallel applies this many objects of a stage at once. Default 16.
	Parallel int
	// Logf receives progress (a host's log).
	Logf func(format string, args ...any)
	// DryRun asks the server what the apply would change, writing nothing
	// (server-side dry-run: admission and defaulting included) and waiting
	// for nothing; an object whose kind is not served yet (its CRD is one
	// of objs) counts as created.
	DryRun bool
}

// ApplyResult counts what Apply did; Order lists the stages as they ran.
type ApplyResult struct {
	Created, Changed, Unchanged int
	Order                       []string
	// ChangedObjects names the objects an apply changed (not created).
	ChangedObjects []string
}

// stage is a group of objects applied together, after the waits of the
// stages before it; after, when there are some, are applied once objs are.
type stage struct {
	name  string
	objs  []*unstructured.Unstructured
	after []*unstructured.Unstructured
}

// Apply applies objs server-side in dependency order, without a retry loop
// around the whole: namespaces first; then what the webhooks among objs
// call (their services, the Deployments behind them and what those pods
// refer to), so that the backends start while everything else is applied;
// the CRDs; the objects of other kinds (their Deployments start while the
// API server establishes the CRDs); the custom resources of those CRDs,
// once every CRD is Established; last the webhook configurations, each
// once its backend Deployment is Available - applied earlier, a webhook
// that nothing answers blocks every object it matches. Only a single
// object is retried, a few times, and only for errors that a retry can
// mend (conflicts, timeouts), or for a bounded time while a webhook does
// not answer.
func Apply(ctx context.Context, cfg *rest.Config, objs []*yaml.RNode, o ApplyOptions) (ApplyResult, error) {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Parallel == 0 {
		o.Parallel = 16
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	// Hundreds of objects: client-go's 5 requests a second (or pkg/kube's
	// 50, or 100) would be most of the run, while the API server on two
	// cores takes more. What bounds the load is o.Parallel requests in
	// flight, and the API server's priority and fairness protects it.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return ApplyResult{}, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return ApplyResult{}, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return ApplyResult{}, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	a := &applier{dyn: dyn, md: md, dc: dc, mapper: mapper, o: o, listed: map[string]bool{}, known: map[string]string{}}
	stages, err := stagesOf(objs)
	if err != nil {
		return ApplyResult{}, err
	}
	// The CRDs are Established while the other stages go on: only the
	// custom resources wait for them, and Apply returns once they are.
	established := func() error { return nil }
	wctx, stopWaiting := context.WithCancel(ctx)
	defer func() { stopWaiting(); _ = established() }() // an apply that failed leaves no wait behind
	for i, s := range stages {
		if i == stageCustom {
			if err := established(); err != nil {
				return a.res, err
			}
			mapper.Reset() // the new kinds are served now
		}
		if len(s.objs)+len(s.after) == 0 {
			continue
		}
		start := time.Now()
		if i == stageWebhooks && !o.DryRun {
			if err := a.waitWebhookBackends(ctx, s.objs); err != nil {
				return a.res, err
			}
			o.Logf("the webhooks' backends Available in %s", time.Since(start).Round(time.Millisecond))
		}
		for _, objs := range [][]*unstructured.Unstructured{s.objs, s.after} {
			if err := a.applyAll(ctx, objs); err != nil {
				return a.res, fmt.Errorf("%s: %w", s.name, err)
			}
		}
		o.Logf("%d %s applied in %s", len(s.objs)+len(s.after), s.name, time.Since(start).Round(time.Millisecond))
		a.res.Order = append(a.res.Order, s.name)
		if i == stageCRDs && !o.DryRun {
			done := make(chan error, 1)
			go func() { done <- safe.Call(func() error { return a.waitEstablished(wctx, s.objs) }) }()
			established = sync.OnceValue(func() error { return <-done })
		}
	}
	return a.res, established()
}

// The stages of an apply, in order.
const (
	stageNamespaces = iota
	stageBackends
	stageCRDs
	stageObjects
	stageCustom
	stageWebhooks
)

func stagesOf(objs []*yaml.RNode) ([]stage, error) {
	st := []stage{{name: "namespaces"}, {name: "webhook backends"}, {name: "CRDs"}, {name: "objects"}, {name: "custom resources"}, {name: "webhook configurations"}}
	// The kinds the CRDs among objs define: their objects wait for them.
	defined := map[string]bool{}
	for _, n := range objs {
		if n.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _ := n.Pipe(yaml.Lookup("spec", "group"))
		kind, _ := n.Pipe(yaml.Lookup("spec", "names", "kind"))
		if group != nil && kind != nil {
			defined[yaml.GetValue(group)+"/"+yaml.GetValue(kind)] = true
		}
	}
	for _, n := range objs {
		var u unstructured.Unstructured
		if err := toUnstructured(n, &u); err != nil {
			return nil, fmt.Errorf("%s %s %s/%s: %w", n.GetApiVersion(), n.GetKind(), n.GetNamespace(), n.GetName(), err)
		}
		if _, agg := u.Object["aggregationRule"]; agg && u.GetKind() == "ClusterRole" {
			// The aggregation controller writes an aggregated role's
			// rules: owning them, every apply would reset them.
			delete(u.Object, "rules")
		}
		i := stageObjects
		switch u.GetKind() {
		case "CustomResourceDefinition":
			i = stageCRDs
		case "Namespace":
			i = stageNamespaces
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			i = stageWebhooks
		}
		if defined[u.GroupVersionKind().Group+"/"+u.GetKind()] {
			i = stageCustom
		}
		st[i].objs = append(st[i].objs, &u)
	}
	st[stageBackends].objs, st[stageBackends].after, st[stageObjects].objs = webhookBackends(st[stageObjects].objs, st[stageWebhooks].objs)
	return st, nil
}

// toUnstructured is n as u. kyaml's MarshalJSON writes n out as YAML text
// and parses that again: a third of an apply's CPU before its first request
// for Kubeflow's 611 objects. Decoding the node is the same decoder on the
// same node; the JSON pass gives the object JSON's types (int64, float64).
func toUnstructured(n *yaml.RNode, u *unstructured.Unstructured) error {
	var m map[string]any
	if err := n.YNode().Decode(&m); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &u.Object)
}

type applier struct {
	dyn dynamic.Interface
	md  metadata.Interface
	dc  discovery.DiscoveryInterface
	// listed: the resource/namespace pairs whose objects were listed
	// (metadata only) before a stage; known: each listed object's key ->
	// when gpukit's applied fields last changed. One list per pair instead
	// of a read per object halves the requests of an apply.
	listed map[string]bool
	known  map[string]string
	mapper meta.RESTMapper
	o      ApplyOptions
	mu     sync.Mutex
	res    ApplyResult
	// hookDeadline: see webhookDeadline
	hookDeadline time.Time
}

// prefetch lists, metadata only, every resource/namespace pair of objs
// whose kind is served.
func (a *applier) prefetch(ctx context.Context, objs []*unstructured.Unstructured) error {
	type pair struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	var pairs []pair
	seen := map[string]bool{}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue // told by apply
		}
		p := pair{gvr: m.Resource}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			p.ns = cmp.Or(u.GetNamespace(), metav1.NamespaceDefault)
		}
		k := pairKey(p.gvr, p.ns)
		a.mu.Lock()
		done := a.listed[k]
		a.mu.Unlock()
		if !seen[k] && !done {
			seen[k] = true
			pairs = append(pairs, p)
		}
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, a.o.Parallel)
		errs = make([]error, len(pairs))
	)
	for i, p := range pairs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = safe.Call(func() error {
				list, err := a.md.Resource(p.gvr).Namespace(p.ns).List(ctx, metav1.ListOptions{})
				if apierrors.IsNotFound(err) {
					list, err = &metav1.PartialObjectMetadataList{}, nil // a namespace not there yet
				}
				if err != nil {
					return fmt.Errorf("list %s in %q: %w", p.gvr.Resource, p.ns, err)
				}
				k := pairKey(p.gvr, p.ns)
				a.mu.Lock()
				defer a.mu.Unlock()
				for _, it := range list.Items {
					a.known[k+"/"+it.Name] = appliedTime(it.ManagedFields)
				}
				a.listed[k] = true
				return nil
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func pairKey(gvr schema.GroupVersionResource, ns string) string {
	return gvr.String() + "|" + ns
}

func (a *applier) applyAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	if err := a.prefetch(ctx, objs); err != nil {
		return err
	}
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, a.o.Parallel)
		mu      sync.Mutex
		errs    []error
		blocked = map[string][]string{} // webhook -> the objects it refused
	)
	for _, u := range objs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := safe.Call(func() error { return a.applyOne(ctx, u) })
			if err == nil {
				return
			}
			key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
			mu.Lock()
			defer mu.Unlock()
			if hook := webhookOf(err); hook != "" {
				blocked[hook] = append(blocked[hook], key)
				return
			}
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		})
	}
	wg.Wait()
	n := len(errs)
	for hook, keys := range blocked {
		sort.Strings(keys)
		n += len(keys)
		who, backend := a.describeWebhook(ctx, hook)
		errs = append(errs, fmt.Errorf("%s did not answer within %s (%s): it blocks %d object(s): %s", who, a.o.Timeout, backend, len(keys), strings.Join(keys, ", ")))
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return fmt.Errorf("%d object(s) failed: %w", n, errors.Join(errs...))
	}
	return nil
}

// applyOne applies u, retrying it alone on errors a retry can mend, and
// for up to the timeout while a webhook does not answer (its backend may
// be starting).
func (a *applier) applyOne(ctx context.Context, u *unstructured.Unstructured) error {
	var err error
	for try := 0; ; try++ {
		if try > 0 {
			wait := time.Duration(try) * time.Second
			if webhookOf(err) != "" {
				wait = 3 * time.Second
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		if err = a.apply(ctx, u); err == nil {
			return nil
		}
		switch {
		case webhookOf(err) != "":
			if time.Now().After(a.webhookDeadline()) {
				return err
			}
		case !retryable(err) || try >= 3:
			return err
		}
	}
}

// webhookDeadline is when objects stop waiting for webhooks that do not
// answer: one timeout after the first such refusal, for all objects of the
// run together (hundreds of objects each waiting a timeout would be hours).
func (a *applier) webhookDeadline() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hookDeadline.IsZero() {
		a.hookDeadline = time.Now().Add(a.o.Timeout)
	}
	return a.hookDeadline
}

var webhookFailure = regexp.MustCompile(`failed calling webhook "([^"]+)"`)

// webhookOf is the webhook the API server could not call for err ("" for
// another error).
func webhookOf(err error) string {
	if err == nil {
		return ""
	}
	if m := webhookFailure.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// describeWebhook names a webhook, its configuration and its service, and
// says why its backend does not answer, as far as the API tells.
func (a *applier) describeWebhook(ctx context.Context, hook string) (who, backend string) {
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(kind) + "s"}
		list, err := a.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, c := range list.Items {
			for _, w := range webhooksOf(&c) {
				if w.name != hook {
					continue
				}
				if w.service == "" {
					return fmt.Sprintf("webhook %s (%s %s, URL %s)", hook, kind, c.GetName(), w.url), "a server outside the cluster"
				}
				who = fmt.Sprintf("webhook %s (%s %s, service %s/%s)", hook, kind, c.GetName(), w.namespace, w.service)
				ready, why, held, err := a.backendAvailable(ctx, w.namespace, w.service)
				switch {
				case err != nil:
					return who, err.Error()
				case ready:
					return who, "its Deployment is Available: the server itself does not answer"
				}
				for _, dep := range held {
					why += "; " + dep.GetName() + ": " + a.whyNotAvailable(ctx, dep)
				}
				return who, why
			}
		}
	}
	return "webhook " + hook, "no webhook configuration names it any more"
}

func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || meta.IsNoMatchError(err)
}

func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && a.o.DryRun && meta.IsNoMatchError(err) {
		a.mu.Lock()
		a.res.Created++
		a.mu.Unlock()
		return nil
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			if r, ok := a.mapper.(interface{ Reset() }); ok {
				r.Reset()
			}
		}
		return err
	}
	// Through the metadata client: the API server answers with the
	// object's metadata only, which is all the apply reads back, instead of
	// encoding the whole object for the client to decode (a CRD's schema
	// is megabytes).
	var ri metadata.ResourceInterface = a.md.Resource(m.Resource)
	ns := ""
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = cmp.Or(u.GetNamespace(), metav1.NamespaceDefault)
		ri = a.md.Resource(m.Resource).Namespace(ns)
	}
	k := pairKey(m.Resource, ns)
	a.mu.Lock()
	listed := a.listed[k]
	beforeAt, existed := a.known[k+"/"+u.GetName()]
	a.mu.Unlock()
	if !listed {
		before, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			beforeAt, existed = appliedTime(before.ManagedFields), true
		}
	}
	body, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	force := true
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if a.o.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	after, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, po)
	if err != nil && a.o.DryRun && !existed && apierrors.IsNotFound(err) {
		err = nil // its namespace is one the apply creates
	}
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !existed:
		a.res.Created++
	case beforeAt != appliedTime(after.ManagedFields):
		a.res.Changed++
		a.res.ChangedObjects = append(a.res.ChangedObjects, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	default:
		a.res.Unchanged++
	}
	return nil
}

// appliedTime is when gpukit's applied fields of an object last changed,
// from its managed fields: the server moves it only when an apply changed
// them, while the resource version also moves with every controller's
// status update.
func appliedTime(fields []metav1.ManagedFieldsEntry) string {
	for _, f := range fields {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Time != nil {
			return f.Time.UTC().String()
		}
	}
	return ""
}

// waitEstablished waits until the API server serves every CRD's kinds:
// until its discovery, which lists a CRD only once it is Established, lists
// the resource in each served version. One small request per group and
// version instead of a read per CRD: Kubeflow's 71 CRDs are megabytes of
// schema, and reading them took longer than establishing them.
func (a *applier) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	deadline := time.Now().Add(a.o.Timeout)
	pending := map[string]map[string]string{} // group/version -> plural -> CRD name
	for _, c := range crds {
		group, _, _ := unstructured.NestedString(c.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(c.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(c.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			name, _ := vm["name"].(string)
			if served, _ := vm["served"].(bool); !served || name == "" {
				continue
			}
			gv := group + "/" + name
			if pending[gv] == nil {
				pending[gv] = map[string]string{}
			}
			pending[gv][plural] = c.GetName()
		}
	}
	for len(pending) > 0 {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			sem = make(chan struct{}, a.o.Parallel)
		)
		for gv := range pending {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				list, err := a.dc.ServerResourcesForGroupVersion(gv)
				if err != nil { // not served yet (NotFound), or not answered: asked again
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, r := range list.APIResources {
					delete(pending[gv], r.Name)
				}
				if len(pending[gv]) == 0 {
					delete(pending, gv)
				}
			})
		}
		wg.Wait()
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var names []string
			for _, byPlural := range pending {
				for _, name := range byPlural {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			names = slices.Compact(names)
			return fmt.Errorf("CRD(s) %s not Established within %s: the API server does not serve their kinds", strings.Join(names, ", "), a.o.Timeout)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	a.o.Logf("%d CRD(s) established", len(crds))
	return nil
}

var deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
var serviceGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// waitWebhookBackends waits until the Deployments behind every webhook's
// service (those whose pods the service selects) are Available, and names
// the webhook, its service and what it would block when one is not.
func (a *applier) waitWebhookBackends(ctx context.Context, hooks []*unstructured.Unstructured) error {
	deadline := time.Now().Add(a.o.Timeout)
	for _, h := range hooks {
		// One that is there already blocks (or not) whatever it does:
		// applying it again introduces nothing, so it is not waited for.
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(h.GetKind()) + "s"}
		if _, err := a.dyn.Resource(gvr).Get(ctx, h.GetName(), metav1.GetOptions{}); err == nil {
			continue
		}
		for _, w := range webhooksOf(h) {
			if w.service == "" {
				continue // a URL webhook: nothing of ours to wait for
			}
			for {
				ready, why, held, err := a.backendAvailable(ctx, w.namespace, w.service)
				if err != nil {
					return err
				}
				if ready {
					break
				}
				if time.Now().After(deadline) {
					for _, d := range held {
						why += "; " + d.GetName() + ": " + a.whyNotAvailable(ctx, d)
					}
					return fmt.Errorf("%s %s: webhook %s's backend (service %s/%s) is not available within %s: %s; not applied, so it blocks nothing yet", h.GetKind(), h.GetName(), w.name, w.namespace, w.service, a.o.Timeout, why)
				}
				if err := sleep(ctx, time.Second); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// backendAvailable: a Deployment in ns whose pods svc selects is Available;
// else why not, and the Deployments that are there but not Available.
func (a *applier) backendAvailable(ctx context.Context, ns, svc string) (bool, string, []*unstructured.Unstructured, error) {
	s, err := a.dyn.Resource(serviceGVR).Namespace(ns).Get(ctx, svc, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "the service does not exist", nil, nil
	}
	if err != nil {
		return false, "", nil, err
	}
	sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector")
	if len(sel) == 0 {
		return false, "the service selects no pods", nil, nil
	}
	list, err := a.dyn.Resource(deployGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", nil, err
	}
	var (
		names []string
		held  []*unstructured.Unstructured
	)
	for i := range list.Items {
		d := &list.Items[i]
		tmpl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if !selects(sel, tmpl) {
			continue
		}
		if conditionTrue(d, "Available") {
			return true, "", nil, nil
		}
		names, held = append(names, d.GetName()), append(held, d)
	}
	if len(names) == 0 {
		return false, "no Deployment runs the pods it selects", nil, nil
	}
	return false, "Deployment(s) " + strings.Join(names, ", ") + " not Available", held, nil
}

var (
	podGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// whyNotAvailable says what holds a Deployment back, as an operator would
// look for it: the Deployment's failing conditions (a ReplicaSet that
// cannot create pods: a missing service account, a quota), else the
// first pod that is not ready and why (unschedulable, image pull).
func (a *applier) whyNotAvailable(ctx context.Context, d *unstructured.Unstructured) string {
	var why []string
	conds, _, _ := unstructured.NestedSlice(d.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		bad := m["status"] != "True"
		if m["type"] == "ReplicaFailure" {
			bad = m["status"] == "True"
		}
		if bad {
			why = append(why, fmt.Sprintf("%v: %v %v", m["type"], m["reason"], m["message"]))
		}
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if len(sel) > 0 {
		pods, err := a.dyn.Resource(podGVR).Namespace(d.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		switch {
		case err != nil:
			why = append(why, "pods: "+err.Error())
		case len(pods.Items) == 0:
			why = append(why, "no pods")
		default:
			for i := range pods.Items {
				if w := podNotReady(ctx, a.dyn, &pods.Items[i]); w != "" {
					why = append(why, w)
					break
				}
			}
		}
	}
	if len(why) == 0 {
		return "no condition says why"
	}
	return strings.Join(why, "; ")
}

// podNotReady says why p is not Ready, or "" when it is.
func podNotReady(ctx context.Context, dyn dynamic.Interface, p *unstructured.Unstructured) string {
	if conditionTrue(p, "Ready") {
		return ""
	}
	phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
	node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
	w := fmt.Sprintf("pod %s %s", p.GetName(), phase)
	if node != "" {
		w += " on " + node
	}
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] == "True" {
			continue
		}
		w += fmt.Sprintf(", %v %v", m["type"], m["status"])
		for _, k := range []string{"reason", "message"} {
			if v, ok := m[k].(string); ok && v != "" {
				w += " " + v
			}
		}
	}
	if node != "" {
		// A node that stopped reporting takes every pod's readiness along.
		n, err := dyn.Resource(nodeGVR).Get(ctx, node, metav1.GetOptions{})
		if err == nil && !conditionTrue(n, "Ready") {
			w += ", node " + node + " is not Ready"
		}
	}
	cs, _, _ := unstructured.NestedSlice(p.Object, "status", "containerStatuses")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if r, ok, _ := unstructured.NestedString(m, "state", "waiting", "reason"); ok {
			w += fmt.Sprintf(", container %v waiting: %s", m["name"], r)
		}
	}
	return w
}

func selects(sel, have map[string]string) bool {
	for k, v := range sel {
		if have[k] != v {
			return false
		}
	}
	return true
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

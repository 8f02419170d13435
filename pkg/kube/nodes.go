package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TaintsAnnotation lists the taints gpukit put on a node (JSON), so that one
// dropped from the inventory is taken off again while taints others put
// there (the node lifecycle controller's, an operator's) are left alone.
const TaintsAnnotation = "gpukit.dev/taints"

// NodeWant is what gpukit wants of one node.
type NodeWant struct {
	// Labels are set as given.
	Labels map[string]string
	// OwnPrefix: labels with it that Labels lacks are gpukit's old ones and
	// are removed (the GPUs changed); every other label is left alone.
	OwnPrefix string
	// Taints are put on the node; those gpukit put earlier and Taints lacks
	// are removed, as are the ones in Remove.
	Taints []corev1.Taint
	Remove []corev1.Taint
}

// Reconcile changes n (a copy the caller owns) to want and says what it
// changed, one phrase each, in a stable order; none: n is as wanted.
func Reconcile(n *corev1.Node, want NodeWant) []string {
	var changes []string
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(want.Labels)) {
		if v, ok := n.Labels[k]; !ok || v != want.Labels[k] {
			n.Labels[k] = want.Labels[k]
			changes = append(changes, "label "+k+"="+want.Labels[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		if _, ok := want.Labels[k]; !ok && want.OwnPrefix != "" && strings.HasPrefix(k, want.OwnPrefix) {
			delete(n.Labels, k)
			changes = append(changes, "label "+k+" removed")
		}
	}
	remove := append(slices.Clone(want.Remove), ownTaints(n)...)
	var kept []corev1.Taint
	for _, t := range n.Spec.Taints {
		if slices.ContainsFunc(want.Taints, func(w corev1.Taint) bool { return w.Key == t.Key && w.Effect == t.Effect && w.Value != t.Value }) {
			continue // replaced below: a node has one taint per key and effect
		}
		if !hasTaint(want.Taints, t) && hasTaint(remove, t) {
			changes = append(changes, "taint "+TaintString(t)+" removed")
			continue
		}
		kept = append(kept, t)
	}
	for _, t := range want.Taints {
		if !hasTaint(kept, t) {
			kept = append(kept, t)
			changes = append(changes, "taint "+TaintString(t))
		}
	}
	n.Spec.Taints = kept
	own := make([]string, 0, len(want.Taints))
	for _, t := range want.Taints {
		own = append(own, TaintString(t))
	}
	slices.Sort(own)
	b, _ := json.Marshal(own)
	if n.Annotations[TaintsAnnotation] != string(b) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[TaintsAnnotation] = string(b)
		if len(changes) == 0 {
			changes = append(changes, "taints recorded as gpukit's")
		}
	}
	return changes
}

// ownTaints are the taints the annotation says gpukit put on n.
func ownTaints(n *corev1.Node) []corev1.Taint {
	var own []string
	if err := json.Unmarshal([]byte(n.Annotations[TaintsAnnotation]), &own); err != nil {
		return nil
	}
	out := make([]corev1.Taint, 0, len(own))
	for _, s := range own {
		if t, err := ParseTaint(s); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// hasTaint: t, value included, is in ts.
func hasTaint(ts []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(ts, func(x corev1.Taint) bool {
		return x.Key == t.Key && x.Effect == t.Effect && x.Value == t.Value
	})
}

// ParseTaint reads kubectl's key[=value]:Effect.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := cutLast(s, ':')
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: want key[=value]:Effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return corev1.Taint{Key: key, Value: value, Effect: e}, nil
	}
	return corev1.Taint{}, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
}

func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// TaintString is kubectl's key[=value]:Effect.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// UpdateNode applies want to listed (a node as a List returned it, not
// changed), reading the node again only when another writer changed it in
// between (the node lifecycle controller updates taints all the time): a
// run that labels a thousand nodes makes one request for each.
func UpdateNode(ctx context.Context, cs kubernetes.Interface, listed *corev1.Node, want NodeWant) error {
	n := listed.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			var err error
			if n, err = cs.CoreV1().Nodes().Get(ctx, listed.Name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		first = false
		if len(Reconcile(n, want)) == 0 {
			return nil
		}
		_, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: "gpukit"})
		return err
	})
}

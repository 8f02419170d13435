package kube

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func taint(s string) corev1.Taint {
	t, err := ParseTaint(s)
	if err != nil {
		panic(err)
	}
	return t
}

func node(labels map[string]string, annotations map[string]string, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: annotations}}
	for _, s := range taints {
		n.Spec.Taints = append(n.Spec.Taints, taint(s))
	}
	return n
}

func TestReconcile(t *testing.T) {
	own := map[string]string{TaintsAnnotation: `["dedicated=ml:NoSchedule"]`}
	tests := []struct {
		name        string
		node        *corev1.Node
		want        NodeWant
		changes     []string
		labels      map[string]string
		taints      []string
		annotations string
	}{
		{
			name:    "labels and taints added, the taints recorded",
			node:    node(map[string]string{"kubernetes.io/hostname": "n"}, nil, "node.kubernetes.io/not-ready:NoSchedule"),
			want:    NodeWant{Labels: map[string]string{"gpukit.dev/gpu.count": "8", "team": "a"}, OwnPrefix: "gpukit.dev/", Taints: []corev1.Taint{taint("dedicated=ml:NoSchedule")}},
			changes: []string{"label gpukit.dev/gpu.count=8", "label team=a", "taint dedicated=ml:NoSchedule"},
			labels:  map[string]string{"kubernetes.io/hostname": "n", "gpukit.dev/gpu.count": "8", "team": "a"},
			taints:  []string{"node.kubernetes.io/not-ready:NoSchedule", "dedicated=ml:NoSchedule"}, annotations: `["dedicated=ml:NoSchedule"]`,
		},
		{
			name:   "as wanted: no change",
			node:   node(map[string]string{"gpukit.dev/gpu.count": "8"}, own, "dedicated=ml:NoSchedule"),
			want:   NodeWant{Labels: map[string]string{"gpukit.dev/gpu.count": "8"}, OwnPrefix: "gpukit.dev/", Taints: []corev1.Taint{taint("dedicated=ml:NoSchedule")}},
			labels: map[string]string{"gpukit.dev/gpu.count": "8"}, taints: []string{"dedicated=ml:NoSchedule"}, annotations: `["dedicated=ml:NoSchedule"]`,
		},
		{
			name:    "gpukit's stale label and its own taint removed; the user's label and another writer's taint kept",
			node:    node(map[string]string{"gpukit.dev/gpu.product": "Tesla-T4", "team": "a"}, own, "dedicated=ml:NoSchedule", "maintenance:NoExecute"),
			want:    NodeWant{Labels: map[string]string{}, OwnPrefix: "gpukit.dev/"},
			changes: []string{"label gpukit.dev/gpu.product removed", "taint dedicated=ml:NoSchedule removed"},
			labels:  map[string]string{"team": "a"}, taints: []string{"maintenance:NoExecute"}, annotations: `[]`,
		},
		{
			name:    "a value changed: the taint of that key and effect replaced",
			node:    node(nil, own, "dedicated=ml:NoSchedule"),
			want:    NodeWant{Taints: []corev1.Taint{taint("dedicated=vision:NoSchedule")}},
			changes: []string{"taint dedicated=vision:NoSchedule"},
			labels:  map[string]string{}, taints: []string{"dedicated=vision:NoSchedule"}, annotations: `["dedicated=vision:NoSchedule"]`,
		},
		{
			name:    "the control-plane taint of a cluster without workers comes off",
			node:    node(nil, nil, "node-role.kubernetes.io/control-plane:NoSchedule"),
			want:    NodeWant{Remove: []corev1.Taint{taint("node-role.kubernetes.io/control-plane:NoSchedule")}},
			changes: []string{"taint node-role.kubernetes.io/control-plane:NoSchedule removed"},
			labels:  map[string]string{}, annotations: `[]`,
		},
		{
			name:    "taints present but not yet recorded",
			node:    node(nil, nil, "dedicated=ml:NoSchedule"),
			want:    NodeWant{Taints: []corev1.Taint{taint("dedicated=ml:NoSchedule")}},
			changes: []string{"taints recorded as gpukit's"},
			labels:  map[string]string{}, taints: []string{"dedicated=ml:NoSchedule"}, annotations: `["dedicated=ml:NoSchedule"]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := tt.node.DeepCopy()
			if got := Reconcile(n, tt.want); !reflect.DeepEqual(got, tt.changes) {
				t.Errorf("changes %q, want %q", got, tt.changes)
			}
			if !reflect.DeepEqual(n.Labels, tt.labels) {
				t.Errorf("labels %v, want %v", n.Labels, tt.labels)
			}
			var taints []string
			for _, x := range n.Spec.Taints {
				taints = append(taints, TaintString(x))
			}
			if !reflect.DeepEqual(taints, tt.taints) {
				t.Errorf("taints %q, want %q", taints, tt.taints)
			}
			if got := n.Annotations[TaintsAnnotation]; got != tt.annotations {
				t.Errorf("annotation %q, want %q", got, tt.annotations)
			}
			if again := Reconcile(n, tt.want); len(again) != 0 {
				t.Errorf("a second reconcile changes %q", again)
			}
		})
	}
}

func TestParseTaint(t *testing.T) {
	for _, tt := range []struct {
		in, err string
		want    corev1.Taint
	}{
		{in: "nvidia.com/gpu=present:NoSchedule", want: corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}},
		{in: "dedicated:PreferNoSchedule", want: corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "a=b=c:NoExecute", want: corev1.Taint{Key: "a", Value: "b=c", Effect: corev1.TaintEffectNoExecute}},
		{in: "dedicated=ml", err: `taint "dedicated=ml": want key[=value]:Effect`},
		{in: "dedicated=ml:Sometimes", err: `effect "Sometimes" is not`},
	} {
		got, err := ParseTaint(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %+v %v", tt.in, got, err)
		case tt.err == "" && TaintString(got) != tt.in:
			t.Errorf("%s: written back as %s", tt.in, TaintString(got))
		}
	}
}

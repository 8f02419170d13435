package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/safe"
)

// PhaseLabels labels and taints the nodes through the API.
const PhaseLabels = "kubernetes/labels"

// Labels labels and taints the nodes of only (all hosts when empty)
// through the API, from the first control plane.
func (l *Layer) Labels(only ...string) engine.Phase { return &labelsPhase{l: l, only: only} }

type labelsPhase struct {
	l    *Layer
	only []string
	// set by Prepare, then by ShouldRun
	all     []*engine.Host
	updates []nodeUpdate
}

type nodeUpdate struct {
	node    *corev1.Node // as listed
	want    kube.NodeWant
	changes []string
}

func (*labelsPhase) Name() string { return PhaseLabels }
func (*labelsPhase) Title() string {
	return "Label and taint the nodes (GPU product, count, memory, driver, CUDA; the inventory's labels and taints)"
}

func (p *labelsPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstControlPlaneIn(p.l.inv, hosts)
}

func (p *labelsPhase) Prepare(_ context.Context, all, _ []*engine.Host) error {
	p.all = all
	return nil
}

func (p *labelsPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	cs, err := p.l.client(ctx, h)
	if err != nil || cs == nil {
		return false, "the nodes are labelled once the cluster exists", err
	}
	var targets []*engine.Host
	for _, t := range p.all {
		if len(p.only) == 0 || slices.Contains(p.only, t.Name()) {
			targets = append(targets, t)
		}
	}
	byName, err := p.nodes(ctx, h, cs, targets)
	if err != nil {
		return false, "", err
	}
	p.updates = nil
	labelled := 0
	for _, t := range targets {
		n, ok := byName[NodeOf(p.l.inv, t.Machine).Name]
		if !ok {
			h.Logf("%s: %s is not a node of the cluster yet: labelled once it joined", PhaseLabels, t.Name())
			continue
		}
		labelled++
		want := kube.Want(p.l.inv, t.Machine, t.Facts)
		if changes := kube.Reconcile(n.DeepCopy(), want); len(changes) > 0 {
			p.updates = append(p.updates, nodeUpdate{node: n, want: want, changes: changes})
		}
	}
	if len(p.updates) == 0 {
		return false, fmt.Sprintf("the labels and taints of %d node(s) are as wanted", labelled), nil
	}
	return true, "", nil
}

// registerTimeout bounds the wait for a joined host's node: kubeadm join
// returns once the kubelet has its credentials, and the kubelet registers
// the node a moment later.
const registerTimeout = 2 * time.Minute

// nodes lists the cluster's nodes once every target's is there (in a
// dry-run, at once: hosts that join in the run are not there yet).
func (p *labelsPhase) nodes(ctx context.Context, h *engine.Host, cs kubernetes.Interface, targets []*engine.Host) (map[string]*corev1.Node, error) {
	deadline := time.Now().Add(registerTimeout)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list the nodes: %w", err)
		}
		byName := map[string]*corev1.Node{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		var missing []string
		for _, t := range targets {
			if name := NodeOf(p.l.inv, t.Machine).Name; byName[name] == nil {
				missing = append(missing, name)
			}
		}
		switch {
		case len(missing) == 0 || h.DryRun():
			return byName, nil
		case time.Now().After(deadline):
			return nil, fmt.Errorf("node(s) %s did not register within %s of joining (their kubelet's log says why: journalctl -u kubelet)", strings.Join(missing, ", "), registerTimeout)
		}
		h.Logf("%s: waiting for node(s) %s to register", PhaseLabels, strings.Join(missing, ", "))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// updateParallel bounds the node updates in flight (the client's rate
// limit bounds them too).
const updateParallel = 16

func (p *labelsPhase) Run(ctx context.Context, h *engine.Host) error {
	var what []string
	for _, u := range p.updates {
		what = append(what, u.node.Name+": "+strings.Join(u.changes, ", "))
	}
	return h.WriteAPI(ctx, fmt.Sprintf("update %d node(s): labels, taints", len(p.updates)), strings.Join(what, "; "), func(ctx context.Context) error {
		cs, err := p.l.client(ctx, h)
		if err != nil {
			return err
		}
		var (
			mu   sync.Mutex
			errs []error
			wg   sync.WaitGroup
			sem  = make(chan struct{}, updateParallel)
		)
		for _, u := range p.updates {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := safe.Call(func() error { return kube.UpdateNode(ctx, cs, u.node, u.want) }); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("node %s: %w", u.node.Name, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

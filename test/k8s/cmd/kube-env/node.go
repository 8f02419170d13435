package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kwokAnnotation marks the nodes kwok runs (its selector in up).
const kwokAnnotation = "kwok.x-k8s.io/node"

// GPUResource is what the NVIDIA device plugin advertises.
const GPUResource = "nvidia.com/gpu"

type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labels) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q: want key=value", v)
	}
	l[k] = val
	return nil
}

// node adds a GPU node that kwok runs: GPU capacity, the labels the NVIDIA
// GPU feature discovery would set, the caller's labels; then waits until
// kwok has made it Ready.
func node(args []string) error {
	fs := flag.NewFlagSet("kube-env node", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the control plane's kubeconfig")
	name := fs.String("name", "", "node name")
	gpus := fs.Int("gpus", 8, "nvidia.com/gpu capacity (0: a CPU node)")
	product := fs.String("product", "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product label")
	memory := fs.Int("memory-mib", 81559, "nvidia.com/gpu.memory label (MiB per GPU)")
	taint := fs.Bool("taint", false, "taint the node "+kwokAnnotation+"=fake:NoSchedule (pods must tolerate it)")
	extra := labels{}
	fs.Var(extra, "label", "extra node label key=value (repeatable)")
	timeout := fs.Duration("timeout", time.Minute, "how long kwok may take to make the node Ready")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || *name == "" {
		return errors.New("-kubeconfig and -name are required")
	}
	cs, err := clientset(*kubeconfig)
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	l := map[string]string{
		"kubernetes.io/hostname": *name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok",
	}
	if *gpus > 0 {
		capacity[GPUResource] = *resource.NewQuantity(int64(*gpus), resource.DecimalSI)
		l["nvidia.com/gpu.present"] = "true"
		l["nvidia.com/gpu.count"] = strconv.Itoa(*gpus)
		l["nvidia.com/gpu.product"] = *product
		l["nvidia.com/gpu.memory"] = strconv.Itoa(*memory)
	}
	for k, v := range extra {
		l[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: *name, Labels: l,
			Annotations: map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if *taint {
		n.Spec.Taints = []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		got, err := cs.CoreV1().Nodes().Get(ctx, *name, metav1.GetOptions{})
		if err == nil {
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					fmt.Printf("node %s ready (%d GPUs)\n", *name, *gpus)
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready after %s: is kwok running?", *name, *timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

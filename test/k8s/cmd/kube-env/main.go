// Command kube-env runs a real Kubernetes control plane on loopback for
// gpukit's tests: an embedded etcd, then kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, each its own process
// (one in-process apiserver per process is all Kubernetes allows), built
// from the same Go modules (test/k8s/build.sh). kwok makes GPU nodes out of
// Node objects: pods that fit are scheduled onto them and reach Running;
// pods over capacity stay Pending. Test tooling only: nothing of it is in
// the gpukit binary.
//
//	kube-env up -dir DIR -bin BINDIR [-webhooks] [-owner-pid PID]
//	    runs until SIGTERM/SIGINT (or until the owner process is gone);
//	    writes DIR/kubeconfig, then DIR/ready, and prints KUBECONFIG=...
//	kube-env node -kubeconfig FILE -name NAME [-gpus 8] [-product NAME]
//	    [-memory-mib N] [-label k=v]... [-taint]
//	    adds a GPU node that kwok runs, and waits until it is Ready
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-env up|node [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "node":
		err = node(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want up or node", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-env:", err)
		os.Exit(1)
	}
}

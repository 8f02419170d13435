// Command pause is the pod sandbox's process for the lab's Kubernetes
// images, doing what Kubernetes' pause does: hold the pod's namespaces,
// reap orphaned children as PID 1, exit on SIGINT or SIGTERM. Test tooling
// only (the lab registry serves it under the pause tag each kubeadm names;
// the lab cannot pull Kubernetes' own). The behaviour is pause 3.10's.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (gpukit test build)")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %s\n", s)
			os.Exit(0)
		}
		for { // reap every child that exited
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

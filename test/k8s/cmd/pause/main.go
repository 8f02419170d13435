// Command pause is the pod sandbox's process for the lab's Kubernetes
// images, doing what Kubernetes' pause does: hold the pod's namespaces,
// reap orphaned children as PID 1, exit on SIGINT or SIGTERM. Test tooling
// only (the registry serves it as pause:3.10.1; there is no registry to
// pull Kubernetes' own from in the lab).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Version is the pause release whose behaviour this follows.
const Version = "3.10.1"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Printf("pause %s (gpukit test build)\n", Version)
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

// Command etcd is etcd's server, built from the etcd version this module
// pins (go.etcd.io/etcd/server/v3), for the lab's etcd image that kubeadm
// runs as a static pod. Test tooling only.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

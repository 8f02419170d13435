// Command kube-site makes a lab (lab.sh up --kube) an air-gapped site's
// Kubernetes sources, for the demo: it builds Kubernetes and the runtime
// from Go modules (test/k8s, cached), publishes the pkgs.k8s.io and Docker
// repository stand-ins in the lab repository, pushes kubeadm's images to the
// lab registry as registry.k8s.io's mirror (and flannel's, built from its
// module, as ghcr.io's), and writes the inventory with
// those mirrors and the settings lab hosts need. With --swarm it makes a
// lab (lab.sh up) a swarm site with the platform on instead: the swarm
// platform's images in the lab registry (cluster.SwarmPlatformImages: real
// ones built from Go modules, Grafana's stand-in, the GPU simulator's DCGM
// exporter) and the inventory naming it as the registry mirror. Test
// tooling only, never shipped.
//
//	go run ./test/cluster/cmd/kube-site -i INVENTORY --inventory-out FILE [--version X.Y.Z | --swarm]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

func main() {
	in := flag.String("i", "", "the lab's inventory (its hosts made with lab.sh up --kube)")
	out := flag.String("inventory-out", "", "the inventory to write, with the site's mirrors")
	version := flag.String("version", "", "Kubernetes X.Y.Z (default: the newest there are modules for)")
	swarm := flag.Bool("swarm", false, "a swarm site with the platform: its images in the lab registry, the inventory's registry mirror")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kube-site -i INVENTORY --inventory-out FILE [--version X.Y.Z | --swarm]")
		os.Exit(2)
	}
	t := &cli{}
	defer t.cleanup()
	l := lab.Open(t, *in)
	if *swarm {
		capture := filepath.Join(fixtures.Dir(t, "dcgm"), "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom")
		cluster.SwarmPlatformImages(t, l, gpusim.DCGMExporter(t), capture)
		registry := cluster.MirrorRegistry(t, l)
		if err := cluster.WriteSwarmInventory(*in, *out, registry); err != nil {
			t.Fatalf("%v", err)
		}
		fmt.Printf("swarm site: the platform's images in the registry mirror %s\n", registry)
		return
	}
	site := cluster.NewSite(t, l, *version)
	if err := site.WriteInventory(*in, *out, cluster.LabKubernetes); err != nil {
		t.Fatalf("%v", err)
	}
	cni := "no CNI (no chart archives: `make fixtures` puts them in .fixtures/charts)"
	if site.Charts != "" {
		cni = "flannel from the charts in " + site.Charts
	}
	fmt.Printf("Kubernetes %s site: packages %s, registry mirror %s, %s\n", site.Version, site.Packages.URL, site.Registry, cni)
}

// cli is the testing.TB the test helpers take, for a command: logs go to
// stderr, a fatal error ends the program. Methods it does not define are
// never called by the helpers it is given to (they would panic).
type cli struct {
	testing.TB
	cleanups []func()
}

func (*cli) Helper()                         {}
func (*cli) Name() string                    { return "kube-site" }
func (*cli) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (*cli) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (*cli) Failed() bool                    { return false }
func (*cli) Context() context.Context        { return context.Background() }
func (c *cli) Cleanup(f func())              { c.cleanups = append(c.cleanups, f) }
func (c *cli) Errorf(format string, args ...any) {
	c.Fatalf(format, args...)
}
func (c *cli) Error(args ...any) { c.Fatalf("%s", fmt.Sprint(args...)) }
func (c *cli) Fatal(args ...any) { c.Fatalf("%s", fmt.Sprint(args...)) }
func (c *cli) Skip(args ...any)  { c.Fatalf("skipped: %s", fmt.Sprint(args...)) }
func (c *cli) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kube-site: "+format+"\n", args...)
	c.cleanup()
	os.Exit(1)
}
func (c *cli) Skipf(format string, args ...any) { c.Fatalf("skipped: "+format, args...) }
func (c *cli) TempDir() string {
	d, err := os.MkdirTemp("", "kube-site-")
	if err != nil {
		c.Fatalf("%v", err)
	}
	c.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (c *cli) cleanup() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
}

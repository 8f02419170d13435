package nvidia_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// What `gpukit bundle` lists for a GPU host is what the phases' scripts
// install there: every name of PackageSets is in a script a run sent the
// host (the kernel's in the headers' name is the script's $k), and
// the fabric manager's aside.
func TestPackageSetsAreWhatTheScriptsInstall(t *testing.T) {
	inv := testInventory(t, "cudaToolkitRoles: [worker]")
	sim := fresh(t, nil)
	fleet := sim.Fleet()
	// scriptsim does not model the CUDA toolkit: its install succeeds here
	// unseen, so that the run goes on to the container toolkit.
	answer := fleet.Handler
	fleet.Handler = func(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		if cmd.Name == "install the CUDA toolkit" {
			return ssh.Result{}, nil
		}
		return answer(ctx, e, cmd)
	}
	var (
		mu      sync.Mutex
		scripts = map[string][]*enginetest.Executor{}
	)
	dial := func(ctx context.Context, m inventory.Machine) (engine.Executor, error) {
		e, err := fleet.Dial(ctx, m)
		if err == nil {
			mu.Lock()
			scripts[m.Name] = append(scripts[m.Name], e.(*enginetest.Executor))
			mu.Unlock()
		}
		return e, err
	}
	checks := preflight.New(inv)
	l := nvidia.New(inv, nvidia.Options{MaxParallelReboots: 1, RebootTimeout: time.Minute})
	r := &engine.Runner{Name: "gpukit init", Phases: []engine.Phase{checks.Facts(), l.Prepare(), l.Driver(), l.FabricManager(),
		l.Persistenced(), l.CUDA(), l.ContainerToolkit(), l.Reboot()}, Sink: &enginetest.Recorder{}, ReconnectInterval: 10 * time.Millisecond}
	sum, err := r.Run(context.Background(), inv.Machines, dial)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range sum.Hosts {
		var sent strings.Builder
		for _, e := range scripts[res.Host] {
			for _, c := range e.Commands() {
				sent.WriteString(c.Script)
			}
		}
		m := inv.Machines[0]
		if res.Host != m.Name {
			m = inv.Machines[1]
		}
		w, err := nvidia.Decide(inv, m, res.Facts)
		if err != nil {
			t.Fatal(err)
		}
		sets := w.PackageSets(inv, res.Facts)
		if len(sets) < 6 {
			t.Fatalf("%s: %d package sets: %+v", res.Host, len(sets), sets)
		}
		for _, s := range sets {
			if strings.Contains(s.For, "fabric manager") {
				// Its script goes to NVSwitch hosts only, which scriptsim
				// does not make; the phase and the list name the package
				// with the same FabricManagerPackage.
				continue
			}
			for _, n := range s.Names {
				word := strings.ReplaceAll(n, res.Facts.Kernel, "$k")
				if !regexp.MustCompile(`(^|[\s"'(=])` + regexp.QuoteMeta(word) + `([\s"'=)]|$)`).MatchString(sent.String()) {
					t.Errorf("%s: the bundle lists %s (%s) and no script sent installs %s", res.Host, n, s.For, word)
				}
			}
		}
	}
}

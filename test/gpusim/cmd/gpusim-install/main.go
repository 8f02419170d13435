// Command gpusim-install puts the lab's GPU SIMULATOR on lab hosts, so that
// the demo and tests see "GPUs" where the lab has none. Test tooling only,
// never shipped. See test/gpusim/README.md.
//
//	go run ./test/gpusim/cmd/gpusim-install -i INVENTORY [--role worker]
//	    [--capture NAME|PATH] [--capture HOST=NAME|PATH]...
//	    [--hardware [--nvswitches HOST=N]... [--nouveau HOST]... [--lab-dir DIR]
//	    [--inventory-out FILE]]
//
// Without --hardware (the replay-only simulation) the hosts get an nvidia-smi
// stand-in replaying a capture as recorded, as if its driver were installed
// and loaded. With --hardware they get simulated GPUs instead (PCI devices, a
// kernel module loaded at boot; full lab hosts only) and the stand-in NVIDIA
// repositories are published in the lab repository: the command prints the
// URL to set as spec.mirrors.nvidia (--inventory-out writes the inventory
// with it), and `gpukit init` installs the driver.
//
// --capture names a capture in --fixtures (file names up to the driver,
// h100-80gb-hbm3__drv590.48.01) or, with a "/", any path prefix on this
// machine (/data/captures/my-gpu__drv580.95.05); HOST=... sets it for one host.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim"
)

// defaultFixtures is the repository's real captures, test/testdata/nvidia-smi.
func defaultFixtures() string {
	if dir, _ := fixtures.Find("nvidia-smi"); dir != "" {
		return dir
	}
	return filepath.Join("test", "testdata", "nvidia-smi")
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	inventory, fixtures, role, labDir, bridge string
	inventoryOut                              string
	hardware                                  bool
	defaultCapture                            string
	captures                                  map[string]string // host -> name or path
	nvswitches                                map[string]int
	nouveau                                   map[string]bool
}

func main() {
	var o options
	var captures, switches, nouveau multi
	flag.StringVar(&o.inventory, "i", "", "lab inventory")
	flag.Var(&captures, "capture", "capture for every host (NAME in --fixtures, or a PATH prefix), or for one: HOST=NAME|PATH; repeatable")
	flag.StringVar(&o.fixtures, "fixtures", defaultFixtures(), "real nvidia-smi captures")
	flag.StringVar(&o.role, "role", "worker", "install on hosts with this role (\"\": every host)")
	flag.BoolVar(&o.hardware, "hardware", false, "simulate GPU hardware (PCI devices, kernel module, boot) and publish the stand-in NVIDIA repositories")
	flag.Var(&switches, "nvswitches", "HOST=N: NVSwitches on that host's PCI bus (--hardware); repeatable")
	flag.Var(&nouveau, "nouveau", "HOST: nouveau is loaded on that host until a boot after it is blacklisted (--hardware); repeatable")
	flag.StringVar(&o.labDir, "lab-dir", "", "the lab's directory (default: from the inventory's path, $GPUKIT_LAB_DIR/run/ID/inventory.yaml)")
	flag.StringVar(&o.inventoryOut, "inventory-out", "", "write the inventory with spec.mirrors.nvidia naming the stand-in repositories to this file (--hardware)")
	flag.StringVar(&o.bridge, "bridge", "10.251.0.1", "the lab bridge's address (the lab repository's host)")
	flag.Parse()
	o.defaultCapture = "h100-80gb-hbm3__drv590.48.01"
	o.captures, o.nvswitches, o.nouveau = map[string]string{}, map[string]int{}, map[string]bool{}
	for _, c := range captures {
		if host, v, ok := strings.Cut(c, "="); ok {
			o.captures[host] = v
		} else {
			o.defaultCapture = c
		}
	}
	for _, s := range switches {
		host, n, ok := strings.Cut(s, "=")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 0 {
			fail(fmt.Errorf("--nvswitches %q: want HOST=N", s))
		}
		o.nvswitches[host] = count
	}
	for _, h := range nouveau {
		o.nouveau[h] = true
	}
	if !o.hardware && (o.inventoryOut != "" || len(switches) > 0 || len(nouveau) > 0) {
		fail(fmt.Errorf("--inventory-out, --nvswitches and --nouveau go with --hardware"))
	}
	if err := run(o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gpusim-install:", err)
	os.Exit(1)
}

func (o options) capture(host string) gpusim.Capture {
	v, ok := o.captures[host]
	if !ok {
		v = o.defaultCapture
	}
	if strings.Contains(v, "/") {
		return gpusim.Capture{Prefix: v}
	}
	return gpusim.Capture{Prefix: filepath.Join(o.fixtures, v)}
}

func run(o options) error {
	inv, err := inventory.Load(o.inventory)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var targets []inventory.Machine
	known := map[string]bool{}
	for _, m := range inv.Machines {
		known[m.Name] = true
		if o.role == "" || m.HasRole(inventory.Role(o.role)) {
			targets = append(targets, m)
		}
	}
	var named []string
	for h := range o.captures {
		named = append(named, h)
	}
	for h := range o.nvswitches {
		named = append(named, h)
	}
	for h := range o.nouveau {
		named = append(named, h)
	}
	for _, h := range named {
		if !known[h] {
			return fmt.Errorf("no host %s in %s", h, o.inventory)
		}
	}
	var repo gpusim.Repo
	var bin string
	if o.hardware {
		labDir := o.labDir
		if labDir == "" {
			abs, err := filepath.Abs(o.inventory)
			if err != nil {
				return err
			}
			labDir = filepath.Dir(filepath.Dir(filepath.Dir(abs))) // $LAB/run/ID/inventory.yaml
		}
		if repo, err = gpusim.Publish(ctx, labDir, o.bridge); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "gpusim")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if bin, err = gpusim.BuildNvidiaSMI(ctx, tmp); err != nil {
			return err
		}
	}
	// The same transport settings as gpukit itself: known_hosts, keys,
	// secrets from the environment, bastion, sudo.
	cfgs, err := connect.Configs(inv, connect.Options{}, connect.OSSecrets())
	if err != nil {
		return err
	}
	dialer := cfgs.NewDialer()
	defer dialer.Close()
	var done []string
	for _, m := range targets {
		c, err := dialer.Dial(ctx, m)
		if err != nil {
			return err
		}
		capture := o.capture(m.Name)
		if o.hardware {
			err = gpusim.InstallHardware(ctx, c, gpusim.Hardware{Capture: capture, NVSwitches: o.nvswitches[m.Name], Nouveau: o.nouveau[m.Name]})
		} else {
			err = gpusim.Install(ctx, c, capture, bin)
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		done = append(done, m.Name+" ("+filepath.Base(capture.Prefix)+")")
	}
	sort.Strings(done)
	if o.hardware {
		fmt.Printf("GPU SIMULATOR (test only): simulated GPUs on %s, no driver installed yet.\n", strings.Join(done, ", "))
		if o.inventoryOut == "" {
			fmt.Printf("Stand-in NVIDIA repositories: set spec.mirrors.nvidia: %s\n", repo.URL)
			return nil
		}
		if err := repo.WriteInventory(o.inventory, o.inventoryOut); err != nil {
			return err
		}
		fmt.Printf("Stand-in NVIDIA repositories: %s, in %s\n", repo.URL, o.inventoryOut)
		return nil
	}
	fmt.Printf("GPU SIMULATOR (test only): nvidia-smi on %s replays the real capture as recorded\n", strings.Join(done, ", "))
	return nil
}

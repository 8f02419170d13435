// Command gpusim-install puts the lab's GPU SIMULATOR (an nvidia-smi stand-in
// replaying a real capture) on lab hosts, so that the demo and tests see
// "GPUs" where the lab has none. Test tooling only, never shipped.
//
//	go run ./test/gpusim/cmd/gpusim-install -i INVENTORY [--capture NAME] [--role worker]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/gpusim"
)

func main() {
	invPath := flag.String("i", "", "lab inventory")
	captureName := flag.String("capture", "h100-80gb-hbm3__drv590.48.01", "capture in the fixtures folder (file name up to the driver)")
	fixtures := flag.String("fixtures", "../shared/fixtures/nvidia-smi", "real nvidia-smi captures")
	role := flag.String("role", "worker", "install on hosts with this role")
	flag.Parse()
	if err := run(*invPath, filepath.Join(*fixtures, *captureName), inventory.Role(*role)); err != nil {
		fmt.Fprintln(os.Stderr, "gpusim-install:", err)
		os.Exit(1)
	}
}

func run(invPath, prefix string, role inventory.Role) error {
	inv, err := inventory.Load(invPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "gpusim")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := gpusim.BuildNvidiaSMI(ctx, tmp)
	if err != nil {
		return err
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
	for _, m := range inv.Machines {
		if !m.HasRole(role) {
			continue
		}
		c, err := dialer.Dial(ctx, m)
		if err != nil {
			return err
		}
		err = gpusim.Install(ctx, c, gpusim.Capture{Prefix: prefix}, bin)
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		done = append(done, m.Name)
	}
	fmt.Printf("GPU SIMULATOR (test only): nvidia-smi on %s replays the real capture %s\n",
		strings.Join(done, ", "), filepath.Base(prefix))
	return nil
}

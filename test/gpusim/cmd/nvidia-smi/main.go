// Command nvidia-smi is the lab's GPU SIMULATOR stand-in for NVIDIA's
// nvidia-smi. Test tooling only, never shipped. It replays a real capture
// named by $GPUSIM_CAPTURE or the first line of /etc/gpusim/capture (a path
// prefix such as /usr/share/gpusim/h100-80gb-hbm3__drv590.48.01). If
// /etc/gpusim/mismatch exists it fails as a real nvidia-smi does after a
// driver package upgrade without reboot.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpukit/gpukit/test/gpusim"
)

func main() {
	if _, err := os.Stat("/etc/gpusim/mismatch"); err == nil {
		fmt.Println("Failed to initialize NVML: Driver/library version mismatch")
		fmt.Println("NVML library version: 580.95")
		os.Exit(18)
	}
	prefix := os.Getenv("GPUSIM_CAPTURE")
	if prefix == "" {
		b, err := os.ReadFile("/etc/gpusim/capture")
		if err != nil {
			fmt.Fprintln(os.Stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
			os.Exit(9)
		}
		prefix = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	c := gpusim.Capture{Prefix: prefix}
	out, err := run(c, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Print(out)
}

func run(c gpusim.Capture, args []string) (string, error) {
	var fields []string
	format := "csv"
	for _, a := range args {
		switch {
		case a == "-L" || a == "--list-gpus":
			b, err := c.List()
			return string(b), err
		case a == "-q" || a == "--query":
			b, err := c.Query()
			return string(b), err
		case strings.HasPrefix(a, "--query-gpu="):
			fields = strings.Split(strings.TrimPrefix(a, "--query-gpu="), ",")
		case strings.HasPrefix(a, "--format="):
			format = strings.TrimPrefix(a, "--format=")
		default:
			return "", fmt.Errorf("gpusim nvidia-smi: unsupported argument %q", a)
		}
	}
	if fields != nil {
		return c.QueryGPU(fields, format)
	}
	b, err := c.Table()
	return string(b), err
}

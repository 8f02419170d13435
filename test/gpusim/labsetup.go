package gpusim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/lab"
)

// Simulate sets up the GPU SIMULATOR for a lab test: it publishes the
// stand-in NVIDIA repositories (PublishForLab) and gives each named full host
// of l its simulated hardware (InstallHardware, all hosts at once, as root
// over gpukit's own SSH transport). Hosts not named stay GPU-less. It fails
// the test on error.
func Simulate(t testing.TB, l *lab.Lab, hosts map[string]Hardware) Repo {
	t.Helper()
	repo := PublishForLab(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for name, hw := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				c, err := DialRoot(ctx, l, name)
				if err != nil {
					return err
				}
				defer c.Close()
				return InstallHardware(ctx, c, hw)
			}()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("GPU SIMULATOR hardware: %v", err)
	}
	t.Logf("GPU SIMULATOR hardware on %d hosts in %s", len(hosts), time.Since(began).Round(time.Millisecond))
	return repo
}

// DialRoot connects to lab host name as root with gpukit's SSH transport.
func DialRoot(ctx context.Context, l *lab.Lab, name string) (*ssh.Client, error) {
	for _, h := range l.Hosts {
		if h.Name == name {
			return ssh.Dial(ctx, ssh.Config{Name: h.Name, Address: h.Address, User: "root",
				KeyFile: l.KeyFile, KnownHostsFile: l.KnownHosts})
		}
	}
	return nil, fmt.Errorf("no lab host %s", name)
}

// Inventory writes a copy of l's inventory whose spec.mirrors.nvidia is the
// stand-in repositories (the other mirrors stay the lab repository) into
// dir and returns its path.
func (r Repo) Inventory(l *lab.Lab, dir string) (string, error) {
	p := filepath.Join(dir, "inventory-gpusim.yaml")
	return p, r.WriteInventory(l.Inventory, p)
}

// WriteInventory writes the lab inventory src to dst with spec.mirrors.nvidia
// naming these stand-in repositories, and their test key's fingerprint as
// spec.mirrors.signingKeys.nvidia.
func (r Repo) WriteInventory(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	done := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "nvidia:") && strings.HasPrefix(line, "    ") {
			lines[i] = "    nvidia: " + r.URL + "  # " + Label + " stand-in repositories (test only)\n" +
				"    signingKeys: {nvidia: [" + r.KeyFingerprint + "]}  # their TEST key"
			done = true
			break
		}
	}
	if !done {
		return fmt.Errorf("gpusim: no spec.mirrors.nvidia line in %s", src)
	}
	return os.WriteFile(dst, []byte(strings.Join(lines, "\n")), 0o644)
}

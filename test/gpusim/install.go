package gpusim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

// Uploader places files on a host (pkg/ssh.Client does).
type Uploader interface {
	Upload(ctx context.Context, f ssh.File) error
}

// BuildNvidiaSMI writes the nvidia-smi stand-in (static, for any lab host)
// into dir and returns its path: the binary the stand-in repositories
// package (built once per process, see Publish).
func BuildNvidiaSMI(ctx context.Context, dir string) (string, error) {
	bin, err := standInBinaries(ctx)
	if err != nil {
		return "", fmt.Errorf("build the nvidia-smi stand-in: %w", err)
	}
	p := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(p, bin.NvidiaSMI, 0o755); err != nil {
		return "", err
	}
	return p, nil
}

// Install is the replay-only simulation: it puts the stand-in nvidia-smi and
// capture's recordings on a host (light hosts too), as root (sudo when the
// login user is not root): /usr/bin/nvidia-smi, /usr/share/gpusim/<capture
// files> and /etc/gpusim/capture. nvidia-smi then answers as if the capture's
// driver were installed and loaded (and reports a driver/library version
// mismatch while /etc/gpusim/mismatch exists); there are no PCI devices, no
// packages, no kernel module. InstallHardware simulates the whole host.
func Install(ctx context.Context, host Uploader, capture Capture, nvidiaSMI string) error {
	put := func(path string, mode os.FileMode, content []byte) error {
		return host.Upload(ctx, ssh.File{Path: path, Mode: mode, Content: bytes.NewReader(content), Sudo: true})
	}
	b, err := os.ReadFile(nvidiaSMI)
	if err != nil {
		return err
	}
	if err := put("/usr/bin/nvidia-smi", 0o755, b); err != nil {
		return err
	}
	files, err := filepath.Glob(capture.Prefix + "__*")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("capture %s: no recordings found", capture.Prefix)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := put("/usr/share/gpusim/"+filepath.Base(f), 0o644, b); err != nil {
			return err
		}
	}
	return put(hoststate.CaptureFile, 0o644, []byte("/usr/share/gpusim/"+filepath.Base(capture.Prefix)+"\n"))
}

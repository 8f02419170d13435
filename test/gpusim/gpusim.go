// Package gpusim is the lab's GPU SIMULATOR. It is test tooling only: nothing
// here ships in the gpukit binary. The lab has no GPUs; the simulator makes
// lab hosts look and behave like GPU servers at the host level - files,
// packages, binaries and systemd units on the host, never a switch inside
// gpukit - so that gpukit's detection, install, reboot, verify and upgrade
// logic runs unchanged over real SSH:
//
//   - Publish builds stand-ins of NVIDIA's package repositories (the CUDA
//     repository and the container toolkit's) into the lab repository: real,
//     signed apt repositories of real .deb packages with NVIDIA's names and
//     versions, whose contents are labelled stand-ins (repo.go, packages.go);
//   - InstallHardware gives a full lab host simulated GPUs: PCI devices, a
//     kernel module "loaded" at boot, a per-host real nvidia-smi capture
//     (hardware.go);
//   - Install, the replay-only simulation, just puts an nvidia-smi stand-in
//     replaying a capture on a host (install.go).
//
// See README.md.
package gpusim

import "github.com/gpukit/gpukit/test/gpusim/capture"

// Capture is the set of recorded outputs of one real GPU machine, e.g. the
// files "h100-80gb-hbm3__drv590.48.01__*" of the fixtures folder; see
// package capture.
type Capture = capture.Capture

// Captures lists the captures in dir that stand a GPU model up: a
// --query-gpu recording, or a -q -x (or -q) report alone (capture.All).
func Captures(dir string) ([]Capture, error) { return capture.All(dir) }

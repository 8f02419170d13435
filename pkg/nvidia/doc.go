// Package nvidia installs the NVIDIA layer of a GPU host - the driver, the
// fabric manager on NVSwitch systems, persistence mode, the CUDA toolkit
// where asked, the container toolkit - verifies it, and reboots a host only
// when the new driver cannot be loaded without. Each phase reads the host's
// state first (State, one round trip) and does nothing on a host that
// already has what the inventory asks for, so a second `gpukit init` on a
// converged cluster changes nothing.
//
// What a host gets is decided in one place, Decide, from the inventory and
// the host's facts: the package source (NVIDIA's CUDA repository, a mirror
// of it, or the distribution's own packages), the kernel module flavor (open
// on Turing and newer GPUs, proprietary on older ones), the packages and
// their version. The scripts (pkg/scripts) only render that decision.
package nvidia

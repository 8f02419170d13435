package inventory

import (
	"fmt"
	"slices"
	"time"
)

// checkNVIDIA checks how the NVIDIA stack is installed. What depends on the
// host (its OS offers distribution packages, its GPUs take open modules, its
// Secure Boot state) is checked when gpukit has probed it.
func (c *checker) checkNVIDIA(cl *Cluster) {
	n := &cl.Spec.NVIDIA
	const p = "spec.nvidia"
	for _, f := range []struct {
		name, v string
		allowed []string
	}{
		{"driverSource", n.DriverSource, []string{DriverSourceCUDARepo, DriverSourceDistribution}},
		{"kernelModules", n.KernelModules, []string{ModulesAuto, ModulesOpen, ModulesProprietary}},
		{"secureBoot", n.SecureBoot, []string{SecureBootRefuse, SecureBootSigned, SecureBootMOK}},
		{"fabricManager", n.FabricManager, []string{FabricManagerAuto, FabricManagerAlways, FabricManagerNever}},
		{"rebootPolicy", n.RebootPolicy, []string{RebootWhenNeeded, RebootAlways}},
	} {
		if !slices.Contains(f.allowed, f.v) {
			c.errorf(p+"."+f.name, "unknown %s %s; expected %s", f.name, q(f.v), joinWords(f.allowed, "or"))
		}
	}
	valid := rolesFor(cl.Spec.Orchestrator)
	seen := map[Role]bool{}
	for i, r := range n.CUDAToolkitRoles {
		path := fmt.Sprintf("%s.cudaToolkitRoles[%d]", p, i)
		switch {
		case seen[r]:
			c.errorf(path, "role %s is listed twice", q(string(r)))
		case !hasRole(valid, r):
			c.errorf(path, "unknown role %s; expected one of %s", q(string(r)), roleNames(valid))
		}
		seen[r] = true
	}
	d, err := time.ParseDuration(n.RebootTimeout)
	switch {
	case err != nil:
		c.errorf(p+".rebootTimeout", "invalid duration %s; expected a Go duration such as 20m or 1h", q(n.RebootTimeout))
	case d < time.Minute:
		c.errorf(p+".rebootTimeout", "reboot timeout %s is shorter than a server takes to restart; give at least 1m", q(n.RebootTimeout))
	case d > 24*time.Hour:
		c.errorf(p+".rebootTimeout", "reboot timeout %s is longer than a day; a host that is not back by then needs a person", q(n.RebootTimeout))
	}
}

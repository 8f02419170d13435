package inventory

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/compat"
)

// checkVersions checks the pinned versions and that they fit together.
func (c *checker) checkVersions(cl *Cluster) {
	v := &cl.Spec.Versions
	const p = "spec.versions"

	driver, driverErr := compat.ParseDriver(v.NvidiaDriver)
	if driverErr != nil {
		c.errorf(p+".nvidiaDriver", "malformed driver version %s; expected a branch NNN (580) or a release NNN.NN[.NN] (580.95.05)", q(v.NvidiaDriver))
	}
	cuda, cudaErr := compat.ParseCUDA(v.CUDA)
	if cudaErr != nil {
		c.errorf(p+".cuda", "malformed CUDA version %s; expected X.Y (e.g. 13.0)", q(v.CUDA))
	}
	if driverErr == nil && cudaErr == nil {
		c.checkDriverForCUDA(cl, driver, cuda)
	}

	if err := checkSemver(v.ContainerToolkit); err != nil {
		c.errorf(p+".containerToolkit", "%v", err)
	}
	if err := checkSemver(v.ContainerRuntime); err != nil && v.ContainerRuntime != "" {
		c.errorf(p+".containerRuntime", "%v", err)
	}

	switch v.Runtime {
	case RuntimeContainerd, RuntimeDocker:
	default:
		c.errorf(p+".runtime", "unknown runtime %s; expected containerd or docker", q(v.Runtime))
	}
	switch cl.Spec.Orchestrator {
	case Swarm:
		if v.Runtime == RuntimeContainerd {
			c.errorf(p+".runtime", "swarm requires runtime docker, not containerd")
		}
		if v.Kubernetes != "" {
			c.checkKubernetesVersion(p+".kubernetes", v.Kubernetes)
			c.warnf(p+".kubernetes", "kubernetes version %s is ignored: the orchestrator is swarm", q(v.Kubernetes))
		}
	case Kubernetes:
		if v.Runtime == RuntimeDocker {
			c.errorf(p+".runtime", "kubernetes requires runtime containerd (Kubernetes removed dockershim in 1.24)")
		}
		c.checkKubernetesVersion(p+".kubernetes", v.Kubernetes)
	}
}

// checkDriverForCUDA checks the requested driver can run the requested CUDA
// (NVIDIA's minimum-driver table); a CUDA newer than the table only warns,
// because a newer gpukit may know it and the operator may know better.
func (c *checker) checkDriverForCUDA(cl *Cluster, driver compat.DriverVersion, cuda compat.CUDAVersion) {
	v := &cl.Spec.Versions
	ok, err := compat.Satisfies(driver, cuda.String())
	switch {
	case errors.Is(err, compat.ErrUnknownCUDA) && cuda.Compare(compat.Newest()) > 0:
		c.warnf("spec.versions.cuda", "CUDA %s is newer than gpukit's driver compatibility table (up to %s); the driver requirement is not checked", v.CUDA, compat.Newest())
	case err != nil:
		c.errorf("spec.versions.cuda", "unsupported CUDA version %s; known releases: %s", v.CUDA, knownCUDA())
	case !ok:
		minimum, _ := compat.MinDriver(cuda.String())
		// Point at whichever of the two the author wrote; blame cuda if both.
		path := "spec.versions.cuda"
		if !c.isSet(path) {
			path = "spec.versions.nvidiaDriver"
		}
		need := fmt.Sprintf("driver %s or newer", minimum)
		if driver.IsBranch() {
			need = fmt.Sprintf("driver branch %d or newer", minimum.Branch)
		}
		c.errorf(path, "CUDA %s%s needs NVIDIA %s, but nvidiaDriver is %s%s", v.CUDA, c.orDefault("spec.versions.cuda"),
			need, v.NvidiaDriver, c.orDefault("spec.versions.nvidiaDriver"))
	}
}

// checkHostVersions checks a host entry's own driver and CUDA, and that
// they fit together (with the cluster's where it sets only one) when the
// host gets the toolkit.
func (c *checker) checkHostVersions(path string, h *Host, spec *Spec) {
	if h.NvidiaDriver == "" && h.CUDA == "" {
		return
	}
	dv, cv := cmp.Or(h.NvidiaDriver, spec.Versions.NvidiaDriver), cmp.Or(h.CUDA, spec.Versions.CUDA)
	driver, derr := compat.ParseDriver(dv)
	if derr != nil && h.NvidiaDriver != "" {
		c.errorf(path+".nvidiaDriver", "malformed driver version %s; expected a branch NNN (470) or a release NNN.NN[.NN] (470.256.02)", q(h.NvidiaDriver))
	}
	cuda, cerr := compat.ParseCUDA(cv)
	if cerr != nil && h.CUDA != "" {
		c.errorf(path+".cuda", "malformed CUDA version %s; expected X.Y (e.g. 12.9)", q(h.CUDA))
	}
	if derr != nil || cerr != nil || !cudaToolkit(spec.NVIDIA.CUDAToolkitRoles, h.Roles, h.CUDAToolkit) {
		return
	}
	ok, err := compat.Satisfies(driver, cuda.String())
	field := path + ".cuda"
	if h.CUDA == "" {
		field = path + ".nvidiaDriver"
	}
	switch {
	case errors.Is(err, compat.ErrUnknownCUDA) && cuda.Compare(compat.Newest()) > 0:
		c.warnf(field, "CUDA %s is newer than gpukit's driver compatibility table (up to %s); the driver requirement is not checked", cv, compat.Newest())
	case errors.Is(err, compat.ErrUnknownCUDA) && cuda.Compare(compat.Releases()[0].CUDA) < 0:
		// Older than the table (a Kepler host's 11.4): any driver of its
		// GPUs' branches runs it; the GPUs are checked against the branch.
	case err != nil:
		c.errorf(field, "unsupported CUDA version %s; known releases: %s", cv, knownCUDA())
	case !ok:
		minimum, _ := compat.MinDriver(cuda.String())
		need := fmt.Sprintf("driver %s or newer", minimum)
		if driver.IsBranch() {
			need = fmt.Sprintf("driver branch %d or newer", minimum.Branch)
		}
		c.errorf(field, "this host gets the CUDA %s toolkit, which needs NVIDIA %s, but its driver is %s", cv, need, dv)
	}
}

func knownCUDA() string {
	var s []string
	for _, r := range compat.Releases() {
		s = append(s, r.CUDA.String())
	}
	return strings.Join(s, ", ")
}

// checkKubernetesVersion checks X.Y.Z and that the minor is supported.
func (c *checker) checkKubernetesVersion(path, v string) {
	if err := checkSemver(v); err != nil {
		c.errorf(path, "%v", err)
		return
	}
	parts := strings.Split(v, ".")
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	if major != 1 || minor < MinKubernetesMinor || minor > MaxKubernetesMinor {
		c.errorf(path, "unsupported Kubernetes version %s; gpukit supports 1.%d to 1.%d", v, MinKubernetesMinor, MaxKubernetesMinor)
	}
}

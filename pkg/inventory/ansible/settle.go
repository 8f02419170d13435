package ansible

import (
	"errors"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// maxSettleRounds bounds settle; dropping a value can reveal at most one
// further conflict per cluster-wide field, and there are eight of them.
const maxSettleRounds = 10

// settle runs the converted cluster through gpukit's own loader, so that
// the rules live in one place (pkg/inventory), not copied here. A
// cluster-wide value taken from an Ansible variable that gpukit rejects (a
// Kubernetes release it does not install, a CUDA the driver cannot run) is
// dropped back to gpukit's default with a note naming the variable; what the
// loader still reports afterwards (a missing control plane, a bad key path)
// becomes notes too, so one conversion shows everything left to fix. It
// reports whether the final cluster loads without error.
func (c *converter) settle(cl *inventory.Cluster, file string) bool {
	for range maxSettleRounds {
		inv, err := inventory.Parse(file, marshal(*cl))
		if err == nil {
			c.loaderNotes(nil, inv.Warnings)
			return true
		}
		var ve *inventory.ValidationError
		if !errors.As(err, &ve) {
			c.notes.add("", 0, "cluster", "gpukit cannot load the converted inventory: "+err.Error())
			return false
		}
		dropped := false
		for _, is := range ve.Issues {
			x, ok := c.fromVar[is.Path]
			if !ok {
				continue
			}
			clearField(cl, is.Path)
			delete(c.fromVar, is.Path)
			dropped = true
			c.notes.addf(x.pos, x.subject(), "%q is not accepted by gpukit (%s); %s is left at gpukit's default", x.text, is.Message, is.Path)
		}
		if !dropped {
			c.loaderNotes(ve.Issues, ve.Warnings)
			return false
		}
	}
	return false
}

// loaderNotes turns what gpukit's loader reports into notes.
func (c *converter) loaderNotes(errs, warns []inventory.Issue) {
	for _, is := range errs {
		c.notes.add("", 0, is.Path, "gpukit validation fails until this is fixed: "+is.Message)
	}
	for _, is := range warns {
		c.notes.add("", 0, is.Path, "gpukit warns: "+is.Message)
	}
}

// clearField empties one of the cluster-wide fields clusterVars sets.
func clearField(cl *inventory.Cluster, path string) {
	v, n := &cl.Spec.Versions, &cl.Spec.Network
	fields := map[string]*string{
		"spec.versions.kubernetes":       &v.Kubernetes,
		"spec.versions.runtime":          &v.Runtime,
		"spec.versions.containerRuntime": &v.ContainerRuntime,
		"spec.versions.nvidiaDriver":     &v.NvidiaDriver,
		"spec.versions.cuda":             &v.CUDA,
		"spec.versions.containerToolkit": &v.ContainerToolkit,
		"spec.network.podCIDR":           &n.PodCIDR,
		"spec.network.serviceCIDR":       &n.ServiceCIDR,
		"spec.network.cni":               &n.CNI,
	}
	if f, ok := fields[path]; ok {
		*f = ""
	}
}

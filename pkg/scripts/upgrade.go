package scripts

import (
	"fmt"
	"regexp"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// The rolling upgrade's scripts (pkg/upgrade) and gpukit status's.
var (
	gpuConsumersStopTemplate = parse[GPUConsumersStopParams]("gpu-consumers-stop.sh")
	gpuStatusTemplate        = parse[NoParams]("gpu-status.sh")
)

// GPUStatus returns the read-only command gpukit status reads each GPU
// host's state with: nvidia-smi -q -x after a "=== nvidia-smi" line, the
// kernel's XID lines after "=== xid"; "gpukit: no nvidia-smi" alone where
// there is none.
func GPUStatus() (ssh.Command, error) {
	return command("gpu status", gpuStatusTemplate, NoParams{})
}

var (
	unitName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@_.:-]*$`)
)

// GPUConsumerUnits are the host's services that hold the GPUs: the
// persistence daemon, the fabric manager, DCGM's host engine.
var GPUConsumerUnits = []string{"nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "dcgm"}

// GPUConsumersStopParams stop the host's GPU consumers before a driver
// change; unless Force, only when no process computes on the GPUs.
type GPUConsumersStopParams struct {
	Units []string
	Force bool
}

// Validate checks the unit names.
func (p GPUConsumersStopParams) Validate() error {
	if len(p.Units) == 0 {
		return fmt.Errorf("no units")
	}
	for _, u := range p.Units {
		if !unitName.MatchString(u) {
			return fmt.Errorf("unit name %q", u)
		}
	}
	return nil
}

// GPUConsumersStop returns the command that stops them.
func GPUConsumersStop(p GPUConsumersStopParams) (ssh.Command, error) {
	return command("stop the GPU consumers", gpuConsumersStopTemplate, p)
}

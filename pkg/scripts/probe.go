package scripts

import (
	"fmt"
	"regexp"

	"github.com/gpukit/gpukit/pkg/ssh"
)

var probeTemplate = parse[ProbeParams]("probe.sh")

// ProbeParams are the parameters of the fact-gathering probe.
type ProbeParams struct {
	// GPUFields are the nvidia-smi --query-gpu fields, in the order the
	// parser reads them (facts.GPUQueryFields).
	GPUFields []string
}

// nvidia-smi field names: lowercase words joined by dots and underscores.
var gpuField = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`)

// Validate checks the field names.
func (p ProbeParams) Validate() error {
	if len(p.GPUFields) == 0 {
		return fmt.Errorf("no nvidia-smi fields")
	}
	for _, f := range p.GPUFields {
		if !gpuField.MatchString(f) {
			return fmt.Errorf("nvidia-smi field %q: want lowercase words separated by . or _", f)
		}
	}
	return nil
}

// Probe returns the read-only command that gathers every fact about a host
// in one round trip. It runs as root: product_uuid and some /sys entries
// are root-only.
func Probe(p ProbeParams) (ssh.Command, error) {
	script, err := probeTemplate.Render(p)
	if err != nil {
		return ssh.Command{}, err
	}
	return ssh.Command{Name: "probe facts", Script: script, Sudo: true}, nil
}

package scripts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// gpukit verify's host scripts. Each prints the tool's own output, or one
// "gpukit: not run: WHY" line when the test cannot run on the host.
var (
	gpuDiagTemplate  = parse[GPUDiagParams]("gpu-diag.sh")
	ncclNodeTemplate = parse[NCCLNodeParams]("nccl-node.sh")
	ncclSize         = regexp.MustCompile(`^[0-9]+[KMG]?$`)
)

// NotRunPrefix starts the line a verify script prints instead of a result.
const NotRunPrefix = "gpukit: not run: "

// Said is what a script's line starting with prefix says after it (its
// first such line): the reason a script gives for not doing its work
// (NotRunPrefix, NotSwappedPrefix).
func Said(out []byte, prefix string) (string, bool) {
	for l := range strings.Lines(string(out)) {
		if why, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return why, true
		}
	}
	return "", false
}

// GPUDiagParams run DCGM's diagnostic at Level (1 quick, 2 medium, 3 long)
// within TimeoutSeconds.
type GPUDiagParams struct {
	Level, TimeoutSeconds int
}

// Validate checks the level and the bound.
func (p GPUDiagParams) Validate() error {
	if p.Level < 1 || p.Level > 4 {
		return fmt.Errorf("DCGM diagnostic level %d: want 1 to 4", p.Level)
	}
	if p.TimeoutSeconds < 60 {
		return fmt.Errorf("diagnostic timeout %ds: want 60 or more", p.TimeoutSeconds)
	}
	return nil
}

// GPUDiag returns the diagnostic's command.
func GPUDiag(p GPUDiagParams) (ssh.Command, error) {
	return command("dcgm diagnostics", gpuDiagTemplate, p)
}

// NCCLNodeParams run all_reduce_perf over every GPU of the host, from
// MinBytes to MaxBytes (nccl-tests' sizes: 8M, 4G), found in PATH or
// Paths, within TimeoutSeconds.
type NCCLNodeParams struct {
	Paths              []string
	MinBytes, MaxBytes string
	TimeoutSeconds     int
}

// Validate checks the sizes, paths and bound.
func (p NCCLNodeParams) Validate() error {
	if !ncclSize.MatchString(p.MinBytes) || !ncclSize.MatchString(p.MaxBytes) {
		return fmt.Errorf("nccl-tests sizes %q to %q: want numbers with K, M or G", p.MinBytes, p.MaxBytes)
	}
	for _, path := range p.Paths {
		if !absPath.MatchString(path) {
			return fmt.Errorf("nccl-tests path %q: want an absolute path", path)
		}
	}
	if p.TimeoutSeconds < 60 {
		return fmt.Errorf("nccl-tests timeout %ds: want 60 or more", p.TimeoutSeconds)
	}
	return nil
}

// NCCLNode returns the bandwidth test's command.
func NCCLNode(p NCCLNodeParams) (ssh.Command, error) {
	return command("nccl bandwidth", ncclNodeTemplate, p)
}

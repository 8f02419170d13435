package gpusim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// Acceptance names the real outputs a host's acceptance tools replay: a
// dcgmi diag table and an nccl-tests log (paths on this machine; "": the
// tool is not on the host).
type Acceptance struct {
	DCGMDiag, NCCL string
}

// dcgmiStandIn answers what gpukit verify asks DCGM: the host engine is
// there (discovery), and a diagnostic prints the recorded table.
const dcgmiStandIn = `#!/bin/sh
# ` + Label + ` stand-in for NVIDIA's dcgmi (test only): it replays a real
# dcgmi diag table recorded on another machine (/usr/share/gpusim/acceptance/dcgm-diag.txt).
case "$1" in
discovery) echo "1 GPU found (gpukit GPU SIMULATOR)" ;;
diag)
	cat /usr/share/gpusim/acceptance/dcgm-diag.txt
	if grep -q '| Fail' /usr/share/gpusim/acceptance/dcgm-diag.txt; then exit 226; fi
	;;
*)
	echo "gpukit GPU SIMULATOR: dcgmi $* is not simulated" >&2
	exit 2
	;;
esac
`

// ncclStandIn replays a real all_reduce_perf log.
const ncclStandIn = `#!/bin/sh
# ` + Label + ` stand-in for nccl-tests' all_reduce_perf (test only): it
# replays a real log recorded on other machines (/usr/share/gpusim/acceptance/nccl.txt).
cat /usr/share/gpusim/acceptance/nccl.txt
`

// InstallAcceptance puts the stand-ins of dcgmi and all_reduce_perf on a
// host (/usr/local/bin), replaying a's files; a tool a names no file for is
// removed.
func InstallAcceptance(ctx context.Context, host interface {
	Uploader
	Run(ctx context.Context, cmd ssh.Command) (ssh.Result, error)
}, a Acceptance) error {
	for _, t := range []struct{ bin, standIn, file, dst string }{
		{"/usr/local/bin/dcgmi", dcgmiStandIn, a.DCGMDiag, "/usr/share/gpusim/acceptance/dcgm-diag.txt"},
		{"/usr/local/bin/all_reduce_perf", ncclStandIn, a.NCCL, "/usr/share/gpusim/acceptance/nccl.txt"},
	} {
		if t.file == "" {
			if _, err := host.Run(ctx, ssh.Command{Name: "remove " + filepath.Base(t.bin), Script: "rm -f " + t.bin + " " + t.dst, Sudo: true}); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(t.file)
		if err != nil {
			return err
		}
		for _, f := range []ssh.File{
			{Path: t.dst, Mode: 0o644, Content: bytes.NewReader(b), Sudo: true},
			{Path: t.bin, Mode: 0o755, Content: bytes.NewReader([]byte(t.standIn)), Sudo: true},
		} {
			if err := host.Upload(ctx, f); err != nil {
				return err
			}
		}
	}
	return nil
}

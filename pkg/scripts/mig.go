package scripts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

var (
	migTemplate        = parse[MIGParams]("mig.sh")
	migInstallTemplate = parse[MIGInstallParams]("mig-install.sh")
)

// MIGGPU is one GPU's wanted MIG state: its mode, and the GPU-instance
// profiles (names and ids, in creation order) it holds, each with one
// compute instance.
type MIGGPU struct {
	Index    int
	Enabled  bool
	Profiles []string
	IDs      []int
}

// Sorted are the profile names sorted, each followed by a space: what the
// script reads back from nvidia-smi -L.
func (g MIGGPU) Sorted() string {
	s := slices.Clone(g.Profiles)
	slices.Sort(s)
	var b strings.Builder
	for _, p := range s {
		b.WriteString(p + " ")
	}
	return b.String()
}

// IDList is the ids for nvidia-smi mig -cgi.
func (g MIGGPU) IDList() string {
	var out []string
	for _, id := range g.IDs {
		out = append(out, strconv.Itoa(id))
	}
	return strings.Join(out, ",")
}

// MIGParams are a host's MIG layout, per GPU, and the units to stop around
// a GPU reset.
type MIGParams struct {
	GPUs  []MIGGPU
	Units []string
}

// Validate checks indexes, names and ids.
func (p MIGParams) Validate() error {
	if err := (GPUConsumersStopParams{Units: p.Units}).Validate(); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, g := range p.GPUs {
		if g.Index < 0 || seen[g.Index] {
			return fmt.Errorf("GPU index %d", g.Index)
		}
		seen[g.Index] = true
		if len(g.Profiles) != len(g.IDs) || !g.Enabled && len(g.IDs) > 0 {
			return fmt.Errorf("GPU %d: %d profiles, %d ids", g.Index, len(g.Profiles), len(g.IDs))
		}
		for i, name := range g.Profiles {
			if !inventory.MIGProfileName(name) || g.IDs[i] < 0 {
				return fmt.Errorf("GPU %d: profile %q (id %d)", g.Index, name, g.IDs[i])
			}
		}
	}
	return nil
}

// MIGScript renders the script that puts the GPUs in that state (the
// script gpukit installs and its boot unit runs).
func MIGScript(p MIGParams) (string, error) { return migTemplate.Render(p) }

// MIGUnit is the boot unit that runs the MIG script: after the driver's
// daemons, before the kubelet, containerd and docker, so that the device
// plugin and the swarm find the instances.
const MIGUnit = `[Unit]
Description=gpukit: partition the GPUs (MIG layout)
DefaultDependencies=no
After=systemd-modules-load.service nvidia-persistenced.service nvidia-fabricmanager.service
Before=kubelet.service containerd.service docker.service nvidia-dcgm.service dcgm.service
Wants=nvidia-persistenced.service

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=600
ExecStart=/bin/bash /usr/local/lib/gpukit/mig.sh

[Install]
WantedBy=multi-user.target`

// MIGInstallParams install Script (a rendered MIGScript) with Unit; an
// empty Script removes both.
type MIGInstallParams struct {
	Script, Unit string
}

// Validate needs the unit with the script.
func (p MIGInstallParams) Validate() error {
	if p.Script != "" && !strings.Contains(p.Unit, "ExecStart=") {
		return fmt.Errorf("a MIG script without its unit")
	}
	return nil
}

// MIGInstall returns the command that installs and runs the MIG script.
func MIGInstall(p MIGInstallParams) (ssh.Command, error) {
	name := "partition the GPUs (MIG)"
	if p.Script == "" {
		name = "remove the MIG boot unit"
	}
	return command(name, migInstallTemplate, p)
}

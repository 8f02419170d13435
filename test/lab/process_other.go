//go:build !unix

package lab

import "os/exec"

// setProcessGroup: the lab runs on Linux only (Require skips elsewhere).
func setProcessGroup(*exec.Cmd) {}

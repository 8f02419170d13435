//go:build unix

package lab

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts lab.sh in a process group of its own and makes cancelling send SIGTERM
// to the whole group: lab.sh's traps then remove the hosts it was creating.
func setProcessGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
}

package local

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child if the runner dies first.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

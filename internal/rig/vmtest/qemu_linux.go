package vmtest

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill qemu when the test process dies (say,
// killed by go test's timeout), so that no guest keeps running unattended.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

package bench

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill cmd when the process that
// started it dies, so that a rank killed by its launcher never leaves its
// measured child running on the node.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

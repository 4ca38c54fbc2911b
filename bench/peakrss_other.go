//go:build !linux

package bench

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent-death
// signal.
func setParentDeathSignal(cmd *exec.Cmd) {}

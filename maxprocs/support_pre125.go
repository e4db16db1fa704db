//go:build !go1.25

package maxprocs

import "runtime"

// runtimeContainerSupport: the runtime of this toolchain has container-aware
// GOMAXPROCS and runtime.SetDefaultGOMAXPROCS.
const runtimeContainerSupport = false

// restoreGOMAXPROCS puts back orig, the value before fitgo (there is no
// runtime.SetDefaultGOMAXPROCS before Go 1.25), and returns the value it
// replaced.
func restoreGOMAXPROCS(orig int) int { return runtime.GOMAXPROCS(orig) }

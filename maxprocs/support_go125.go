//go:build go1.25

package maxprocs

import "runtime"

// runtimeContainerSupport: the runtime of this toolchain has container-aware
// GOMAXPROCS and runtime.SetDefaultGOMAXPROCS.
const runtimeContainerSupport = true

// restoreGOMAXPROCS hands GOMAXPROCS back to the runtime (its default value,
// and its own updates where they are enabled) and returns the value it
// replaced.
func restoreGOMAXPROCS(int) int {
	prev := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	return prev
}

//go:build go1.25

package maxprocs

import "runtime"

// runtimeContainerSupport: the runtime of this toolchain has container-aware
// GOMAXPROCS and runtime.SetDefaultGOMAXPROCS.
const runtimeContainerSupport = true

// setDefaultGOMAXPROCS hands GOMAXPROCS back to the runtime: its default
// value, and its automatic updates where they are enabled.
func setDefaultGOMAXPROCS() bool {
	runtime.SetDefaultGOMAXPROCS()
	return true
}

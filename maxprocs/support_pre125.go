//go:build !go1.25

package maxprocs

// runtimeContainerSupport: the runtime of this toolchain has container-aware
// GOMAXPROCS and runtime.SetDefaultGOMAXPROCS.
const runtimeContainerSupport = false

// setDefaultGOMAXPROCS does nothing before Go 1.25, which has no
// runtime.SetDefaultGOMAXPROCS; callers then set the saved value.
func setDefaultGOMAXPROCS() bool { return false }

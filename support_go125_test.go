//go:build go1.25

package fitgo

// runtimeContainerSupport: this toolchain's runtime has its own
// container-aware GOMAXPROCS (Go 1.25 and later).
const runtimeContainerSupport = true

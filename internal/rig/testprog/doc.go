// Package testprog holds programs that fitgo's tests build with go build and
// run as child processes, in cgroups made for the test: blank imports fitgo
// like an application; blankgo125 does the same with the Go 1.25+ runtime's
// own container support switched on; blankpreset with a library that sets
// the memory limit in an init that runs before fitgo's; sidecar holds
// memory resident as another process under the same limit; blankleak
// blank-imports fitgo and leaks until the kernel kills it; blankcgo is blank
// built with cgo, to hold C memory.
package testprog

// Package earlyset sets the memory limit to 300 MiB in its init, as a
// library such as automemlimit does; it initialises before fitgo (Go
// initialises independent packages in import-path order).
package earlyset

import "runtime/debug"

// Limit is the memory limit set at init.
const Limit = 300 << 20

func init() { debug.SetMemoryLimit(Limit) }

// Command blank is a test program: a main module with go 1.23 (so the Go
// runtime's own container support is off) that blank-imports fitgo and
// reports what it does (see run.Run).
package main

import (
	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() { run.Run() }

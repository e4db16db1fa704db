// Command blankunset is blank with a library that changes GOMAXPROCS and
// GOMEMLIMIT in the environment in an earlier init: fitgo must go by the
// environment the process started with.
package main

import (
	_ "github.com/fitgo/fitgo"
	_ "github.com/fitgo/fitgo/internal/rig/testprog/earlyunset"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() { run.Run() }

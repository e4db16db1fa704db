// Command blankpreset is blank with a library that sets the memory limit in
// an earlier init: fitgo must keep it.
package main

import (
	_ "github.com/fitgo/fitgo"
	_ "github.com/fitgo/fitgo/internal/rig/testprog/earlyset"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() { run.Run() }

//go:build go1.25

//go:debug containermaxprocs=1
//go:debug updatemaxprocs=1

// Command blankgo125 is blank with the Go runtime's container-aware
// GOMAXPROCS and its automatic updates switched on, as in a main module whose
// go line is 1.25 or later.
package main

import (
	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() { run.Run() }

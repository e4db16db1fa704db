//go:build linux

// Command blankhog is blank with a library that holds all but three file
// descriptors from an earlier init until SIGUSR1.
package main

import (
	_ "github.com/fitgo/fitgo"
	_ "github.com/fitgo/fitgo/internal/rig/testprog/earlyhog"

	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() { run.Run() }

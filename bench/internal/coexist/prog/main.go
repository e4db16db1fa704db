// Command prog blank-imports fitgo and, as Caddy's cmd.Main does, calls
// automaxprocs' and automemlimit's Set in main, after every init; then it
// reports GOMAXPROCS, GOMEMLIMIT and fitgo's status as the library's test
// programs do (internal/rig/testprog/run).
package main

import (
	"log"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"go.uber.org/automaxprocs/maxprocs"

	_ "github.com/fitgo/fitgo"
	"github.com/fitgo/fitgo/internal/rig/testprog/run"
)

func main() {
	if _, err := maxprocs.Set(maxprocs.Logger(log.Printf)); err != nil {
		log.Print(err)
	}
	if _, err := memlimit.Set(); err != nil {
		log.Print(err)
	}
	run.Run()
}

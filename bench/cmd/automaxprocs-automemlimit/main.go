// Command automaxprocs-automemlimit is the benchmark workload with
// go.uber.org/automaxprocs and github.com/KimMachineGun/automemlimit
// blank-imported with their defaults, as many services run today.
package main

import (
	_ "github.com/KimMachineGun/automemlimit"
	_ "go.uber.org/automaxprocs"

	"github.com/fitgo/fitgo/bench/workload"
)

func main() { workload.Main("automaxprocs+automemlimit") }

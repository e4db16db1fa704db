// Command service-autos is the service with automaxprocs and automemlimit
// blank-imported.
package main

import (
	_ "github.com/KimMachineGun/automemlimit"
	_ "go.uber.org/automaxprocs"

	"github.com/fitgo/fitgo/bench/size/service"
)

func main() { service.Main() }

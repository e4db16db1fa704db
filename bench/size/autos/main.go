// Command autos is an empty program that blank-imports automaxprocs and
// automemlimit.
package main

import (
	_ "github.com/KimMachineGun/automemlimit"
	_ "go.uber.org/automaxprocs"
)

func main() {}

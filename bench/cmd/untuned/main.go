//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command untuned is the benchmark workload as a program whose go.mod says
// go 1.24 or older runs it: the runtime's container-aware GOMAXPROCS is off
// (GOMAXPROCS = the CPU count) and nothing sets GOMEMLIMIT.
package main

import "github.com/fitgo/fitgo/bench/workload"

func main() { workload.Main("untuned") }

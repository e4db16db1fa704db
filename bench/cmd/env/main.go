// Command env is the benchmark workload for the Kubernetes downward-API recipe:
// the binary is the runtime variant's, and the runner sets GOMAXPROCS to the CPU
// limit rounded up and GOMEMLIMIT to the memory limit in bytes in its
// environment, as resourceFieldRef limits.cpu / limits.memory would.
package main

import "github.com/fitgo/fitgo/bench/workload"

func main() { workload.Main("env") }

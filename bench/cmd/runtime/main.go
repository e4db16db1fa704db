// Command runtime is the benchmark workload with the Go 1.25+ runtime's own
// defaults: GOMAXPROCS from the leaf cgroup's CPU quota (at least 2), updated
// about once a second; no GOMEMLIMIT.
package main

import "github.com/fitgo/fitgo/bench/workload"

func main() { workload.Main("runtime") }

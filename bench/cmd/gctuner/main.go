// Command gctuner is the benchmark workload with ByteDance's gctuner
// (github.com/bytedance/gopkg/util/gctuner) set up as its README says: a
// threshold of 70 % of the memory limit, read from the cgroup at start-up.
// It sets GOGC = (threshold − heap in use) / heap in use × 100, between 50
// and 500, after each GC. No GOMEMLIMIT. automaxprocs sets GOMAXPROCS, as
// fitgo would at the gc scenario's quotas (1 at 0.5 and 1 CPU), so that the
// comparison is of the GC policies.
package main

import (
	"github.com/bytedance/gopkg/util/gctuner"
	_ "go.uber.org/automaxprocs"

	"github.com/fitgo/fitgo/bench/workload"
	"github.com/fitgo/fitgo/cgroup"
)

func main() {
	if lim, err := cgroup.Read(); err == nil {
		if m, ok := lim.MemoryMax(); ok {
			gctuner.Tuning(uint64(0.7 * float64(m)))
		}
	}
	workload.Main("gctuner")
}

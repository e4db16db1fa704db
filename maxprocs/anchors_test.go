package maxprocs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// TestAnchorRulesArePolicies: the README's table (readme_test.go in the
// root package) gives the Go runtime's and automaxprocs' GOMAXPROCS as
// fitgo's Policy set to their rules. They must be the rules fitgo uses to
// predict the runtime's own value and to recognise automaxprocs'.
func TestAnchorRulesArePolicies(t *testing.T) {
	for _, cpuMax := range []string{"25000 100000", "50000 100000", "100000 100000", "125000 100000",
		"150000 100000", "195000 100000", "250000 100000", "850000 100000", "1200000 100000", "42000 100000"} {
		lim, err := cgroup.ReadFS(v2FS(cpuMax, ""))
		require.NoError(t, err)
		q, ok := lim.CPUQuota()
		require.True(t, ok, cpuMax)
		for _, ncpu := range []int{1, 2, 8, 16} {
			assert.Equal(t, goRuntime{aware: true}.runtimeDefault(lim, ncpu), Policy{Rounding: Ceil, Min: 2}.Procs(q, ncpu),
				"the runtime's rule at %v cores on %d CPUs", q, ncpu)
			if q > float64(ncpu) {
				continue // automaxprocs does not cap at the CPU count; the README's host has more
			}
			n, _ := (&Fit{}).automaxprocs(lim)
			assert.Equal(t, n, Policy{Rounding: Floor}.Procs(q, ncpu), "automaxprocs' rule at %v cores on %d CPUs", q, ncpu)
		}
	}
}

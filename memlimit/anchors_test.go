package memlimit

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// TestAutomemlimitRuleIsPolicy: the README's table (readme_test.go in the
// root package) gives automemlimit's GOMEMLIMIT as fitgo's Policy with its
// ratio and no minimum, applied to memory.max alone. It must be the rule
// fitgo uses to recognise automemlimit's value, which ignores memory.high.
func TestAutomemlimitRuleIsPolicy(t *testing.T) {
	for _, mib := range []int64{20, 256, 384, 512, 1000, 4096} {
		max := strconv.FormatInt(mib<<20, 10) + "\n"
		lim, err := cgroup.ReadFS(v2FS(max, strconv.FormatInt(mib<<19, 10)+"\n", ""))
		require.NoError(t, err)
		hard, ok := lim.MemoryMax()
		require.True(t, ok)
		for _, ratio := range []float64{0.9, 0.8, 1} {
			f := &Fit{ratio: ratio}
			v, _ := f.automemlimit(lim)
			assert.Equal(t, v, Policy{Ratio: ratio, Min: -1}.SoftLimit(hard), "automemlimit's %v × %d MiB", ratio, mib)
		}
	}
}

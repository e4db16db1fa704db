package vmtest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

// TestCgroupV2 boots the guest once with cgroup v2 and checks the scenarios of
// guest/v2.sh.
func TestCgroupV2(t *testing.T) {
	t.Parallel()
	c := boot(t, "v2")

	t.Run("kernel", func(t *testing.T) {
		var f filesResult
		one(t, c, "v2/kernel", "files", &f)
		require.Empty(t, f.Errors)
		assert.Equal(t, "0::/\n", f.Files["/proc/self/cgroup"])
		assert.Contains(t, f.Files["/sys/fs/cgroup/cgroup.controllers"], "cpu")
		assert.Equal(t, "cpu memory\n", f.Files["/sys/fs/cgroup/cgroup.subtree_control"])
	})

	// 1. cpu.max 150000 100000 and memory.max 512M on the leaf.
	t.Run("leaf", func(t *testing.T) {
		var rt runtimeResult
		one(t, c, "v2/leaf", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.NumCPU)
		assert.Contains(t, rt.DefaultGODEBUG, "containermaxprocs=1")
		// The runtime's own rule: ceil(1.5) = 2, and never below 2.
		assert.Equal(t, 2, rt.GOMAXPROCS)
		assert.Equal(t, int64(math.MaxInt64), rt.GOMEMLIMIT)
	})

	// 2. 1 CPU and 256 MiB on the parent only.
	t.Run("parent", func(t *testing.T) {
		var f filesResult
		one(t, c, "v2/parent", "files", &f)
		assert.Equal(t, "max 100000\n", f.Files["/sys/fs/cgroup/parent/leaf/cpu.max"])
		assert.Equal(t, "max\n", f.Files["/sys/fs/cgroup/parent/leaf/memory.max"])

		// The runtime reads the leaf only: it misses the parent's 1 CPU and
		// uses all 4 vCPUs.
		var rt runtimeResult
		one(t, c, "v2/parent", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.GOMAXPROCS)
	})
}

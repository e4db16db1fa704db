//go:build linux

package fitgo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/testprog"
	"github.com/fitgo/fitgo/internal/testprog/cgv1"
)

// TestRealKernelV1GCPolicy: a blank-import program with FITGO=gc=auto,
// alone under a 1 GiB v1 limit, raises GOGC after a GC cycle, aiming the
// heap at 0.7 × 1 GiB. The limit resized to 128 MiB under it brings
// GOMEMLIMIT down to 0.9 × 128 MiB and GOGC with it, to a heap ceiling of
// 0.7 × 128 MiB, and the runtime's heap goal within it. Then the program sets GOGC itself: fitgo hands GOGC over
// and, at the resize back to 1 GiB, moves GOMEMLIMIT and not GOGC. The waits
// only cap a hung program.
func TestRealKernelV1GCPolicy(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/testprog/blank")
	cg := cgv1.NewPair(t)
	cgv1.SetMemory(t, cg.MemChild, 1024*mib)
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms,gc=auto")
	first, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	require.Equal(t, int64(1024*mib*9/10), first.GOMEMLIMIT, first.MemLimit)
	assert.Equal(t, 100, first.GOGC)

	c.Send(t, "gc") // a first cycle: the policy needs a live heap
	ceiling := func(lim int64) int64 { return int64(0.7 * float64(lim)) }
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOGC > 100 && s.GCCeiling == ceiling(1024*mib)
	})
	t.Logf("1 GiB: GOGC %d, heap goal %d, %s", raised.GOGC, raised.HeapGoal, raised.GCReason)
	assert.LessOrEqual(t, int64(raised.HeapGoal), raised.GCCeiling)

	cgv1.SetMemory(t, cg.MemChild, 128*mib)
	low, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOMEMLIMIT == 128*mib*9/10 && s.GCCeiling == ceiling(128*mib)
	})
	t.Logf("128 MiB: GOGC %d, heap goal %d, %s", low.GOGC, low.HeapGoal, low.GCReason)
	assert.LessOrEqual(t, int64(low.HeapGoal), low.GCCeiling, "the runtime's goal within the new ceiling")
	assert.Less(t, low.GOGC, raised.GOGC/4, "the room given back")
	assert.Less(t, low.GCCeiling, low.GOMEMLIMIT)

	c.Send(t, "setgogc 300")
	over, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GCReason == "GOGC was changed outside fitgo; no longer managed"
	})
	assert.Equal(t, 300, over.GOGC)
	cgv1.SetMemory(t, cg.MemChild, 1024*mib)
	back, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOMEMLIMIT == 1024*mib*9/10
	})
	assert.Equal(t, 300, back.GOGC, "the program's GOGC stays")
	assert.True(t, back.MemLimitFollowing)
}

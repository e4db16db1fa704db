//go:build linux

package fitgo

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
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
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
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

// TestRealKernelV1GCPolicyMaxGOGC: FITGO_MEMORY_LIMIT=200T with no cgroup
// limit, and a live heap under 4 MiB: the policy's formula gives GOGC
// 3,337,859,980, which the runtime would wrap to off. GOGC is held at
// 100,000, later readings see it as fitgo's own, and Undo gives back 100 and
// no memory limit. The waits only cap a hung program; the report's second
// only lets about ten readings pass.
func TestRealKernelV1GCPolicyMaxGOGC(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t) // no memory limit set
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms,gc=auto", "FITGO_MEMORY_LIMIT=200T")
	first, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	require.Contains(t, first.MemLimit, "from $FITGO_MEMORY_LIMIT")
	require.Equal(t, 100, first.GOGC)

	c.Send(t, "gc")
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOGC != 100 })
	t.Logf("GOGC %d, heap goal %d, %s", raised.GOGC, raised.HeapGoal, raised.GCReason)
	assert.Equal(t, 100000, raised.GOGC)
	c.Send(t, "report 1000")
	later, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Report })
	assert.Equal(t, 100000, later.GOGC)
	assert.Equal(t, 100000, later.GCStatus)
	assert.Equal(t, "raised so that the heap goal reaches 70 % of the available memory", later.GCReason)

	c.Send(t, "undo")
	undone, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOMEMLIMIT == math.MaxInt64 })
	assert.Equal(t, 100, undone.GOGC, "GOGC given back")
	assert.Equal(t, int64(math.MaxInt64), undone.GOMEMLIMIT, "no memory limit, as before fitgo")
}

// TestRealKernelV1GCPolicyReadGOGC: the program reads GOGC the usual way,
// debug.SetGCPercent(debug.SetGCPercent(-1)), every millisecond, under
// FITGO=refresh=10ms,gc=auto and FITGO_MEMORY_LIMIT=1Gi, while it churns
// garbage: a read during a GC's mark waits for the mark to end, so readings
// now and then find -1, at times several in a row (before the fix, the
// policy handed over after some 650 to 2,800 reads here). After 12,000
// reads the policy still manages GOGC: once the reads stop, a 200 MiB live
// heap brings it down. The program's own GOGC 300 is handed over, and Status
// reports the GOGC in force. The waits only cap a hung program.
func TestRealKernelV1GCPolicyReadGOGC(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t) // no memory limit set
	c := cg.StartIn(t, prog, "FITGO=refresh=10ms,gc=auto", "FITGO_MEMORY_LIMIT=1Gi")
	_, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	const handedOver = "GOGC was changed outside fitgo; no longer managed"
	c.Send(t, "gc")
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOGC > 1000 })
	t.Logf("GOGC %d, heap ceiling %d", raised.GOGC, raised.GCCeiling)

	c.Send(t, "churn")
	c.Send(t, "gogcread")
	read, d := c.WaitFor(t, time.Now(), 300*time.Second, func(s testprog.State) bool {
		return s.GOGCReads >= 12000 || s.GCReason == handedOver
	})
	require.NotEqual(t, handedOver, read.GCReason, "after %d reads of GOGC in %v: GOGC %d, Status %d", read.GOGCReads, d,
		read.GOGC, read.GCStatus)
	t.Logf("%d reads of GOGC in %v: %s", read.GOGCReads, d, read.GCReason)
	// The reads stop: a read that waits for a mark would take the changes
	// below back.
	c.Send(t, "gogcread stop")
	c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Done == "gogcread" })

	c.Send(t, "heap 200")
	down, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GCReason == handedOver || s.GOGC > 100 && s.GOGC < 1000
	})
	require.NotEqual(t, handedOver, down.GCReason)
	t.Logf("200 MiB live: GOGC %d, %s", down.GOGC, down.GCReason)

	c.Send(t, "setgogc 300")
	c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GCReason == handedOver && s.GOGC == 300 && s.GCStatus == 300
	})
}

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
// alone under a 1 GiB v1 limit, idle after a GC cycle: the GC is cheap and
// GOGC stays 100. It churns garbage over a 50 MiB live heap: GOGC is raised,
// with the heap goal under the ceiling, 0.7 × 1 GiB. The limit resized to
// one whose ceiling is below that goal brings GOMEMLIMIT down and GOGC with
// it, and the runtime's heap goal within the new ceiling. Then the program sets GOGC itself: fitgo hands GOGC over
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
	c.Send(t, "report 1000")
	idle, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Report })
	assert.Equal(t, 100, idle.GOGC, "%s", idle.GCReason)

	c.Send(t, "heap 50")
	c.Send(t, "churn")
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOGC > 200 && s.GCCeiling == ceiling(1024*mib)
	})
	t.Logf("1 GiB: GOGC %d, heap goal %d, %s", raised.GOGC, raised.HeapGoal, raised.GCReason)
	assert.LessOrEqual(t, int64(raised.HeapGoal), raised.GCCeiling)

	// The churn ends, so that no GC moves the goal with a live heap the
	// policy's reading has not seen; then a limit the memory in use fits
	// under, whose ceiling is below the heap goal: 9/7 × the goal, rounded
	// down to MiB (a ceiling of 0.9 × the goal).
	c.Send(t, "calm")
	c.Send(t, "report 300")
	calm, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Report })
	lim := (int64(calm.HeapGoal) * 9 / 7) &^ (mib - 1)
	cgv1.SetMemory(t, cg.MemChild, lim)
	low, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOMEMLIMIT == lim*9/10 && s.GCCeiling == ceiling(lim)
	})
	t.Logf("%d MiB: GOGC %d, heap goal %d, %s", lim/mib, low.GOGC, low.HeapGoal, low.GCReason)
	assert.LessOrEqual(t, int64(low.HeapGoal), low.GCCeiling, "the runtime's goal within the new ceiling")
	assert.Less(t, low.GOGC, raised.GOGC, "the room given back")
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
// limit, a live heap under 4 MiB and garbage churned: the ceiling's formula
// gives GOGC 3,337,859,980, which the runtime would wrap to off. GOGC is the
// CPU target's, a valid value (at most 100,000, TestGCPolicyMaxGOGC), later
// readings see it as fitgo's own, and Undo gives back 100 and no memory
// limit. The waits only cap a hung program; the report's second only lets
// about ten readings pass.
func TestRealKernelV1GCPolicyMaxGOGC(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t) // no memory limit set
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms,gc=auto", "FITGO_MEMORY_LIMIT=200T")
	first, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	require.Contains(t, first.MemLimit, "from $FITGO_MEMORY_LIMIT")
	require.Equal(t, 100, first.GOGC)

	c.Send(t, "churn")
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOGC != 100 })
	t.Logf("GOGC %d, heap goal %d, %s", raised.GOGC, raised.HeapGoal, raised.GCReason)
	assert.Greater(t, raised.GOGC, 100)
	assert.LessOrEqual(t, raised.GOGC, 100000)
	c.Send(t, "report 1000")
	later, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Report })
	assert.Greater(t, later.GOGC, 100)
	assert.LessOrEqual(t, later.GOGC, 100000)
	assert.Equal(t, later.GOGC, later.GCStatus)
	assert.Equal(t, "raised so that the GC takes about 2 % of the CPU", later.GCReason)

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
// policy handed over after some 650 to 2,800 reads here). It holds a 50 MiB
// live heap, so that a cycle comes per 50 MiB of garbage or more: over a live
// heap of a few MiB (GOGC 241 from the CPU target) the GC marks back to
// back, the reads find -1 for longer than the 0.5 s the hand-over waits, and
// the policy handed over once, after 10,764 reads. After 12,000 reads the
// policy still manages GOGC, and still does a second after the reads stop,
// with 200 MiB more of live heap (the CPU target's GOGC does not follow the
// heap's size, so no value is asserted). The program's own GOGC 300 is
// handed over, and Status reports the GOGC in force. The waits only cap a
// hung program.
func TestRealKernelV1GCPolicyReadGOGC(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t) // no memory limit set
	c := cg.StartIn(t, prog, "FITGO=refresh=10ms,gc=auto", "FITGO_MEMORY_LIMIT=1Gi")
	_, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	const handedOver = "GOGC was changed outside fitgo; no longer managed"
	c.Send(t, "heap 50")
	c.Send(t, "churn")
	raised, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOGC > 100 })
	t.Logf("GOGC %d, heap ceiling %d", raised.GOGC, raised.GCCeiling)

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
	c.Send(t, "report 1000")
	down, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Report })
	require.NotEqual(t, handedOver, down.GCReason)
	assert.Equal(t, down.GOGC, down.GCStatus, "Status has the GOGC in force")
	t.Logf("250 MiB live: GOGC %d, %s", down.GOGC, down.GCReason)

	c.Send(t, "setgogc 300")
	c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GCReason == handedOver && s.GOGC == 300 && s.GCStatus == 300
	})
}

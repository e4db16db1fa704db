//go:build linux

package fitgo

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// nonGoCase is a blank-import program alone under a 512 MiB v1 limit,
// refreshed every 100ms, and the commands that make it hold and free
// 150 MiB outside the Go runtime.
type nonGoCase struct {
	prog       string
	hold, free string
}

// whole is 0.9 × 512 MiB, the value alone under the limit.
const whole = int64(512 * mib * 9 / 10)

// within150 reports whether v is 0.9 × (512 − 150) MiB give or take 8 %.
func within150(v int64) bool {
	exact := float64(362*mib) * 0.9
	return float64(v) >= exact*0.92 && float64(v) <= exact*1.08
}

// start starts the program in a new pair of cgroups, 512 MiB on the child,
// with env, and checks its first value, the whole limit's.
func (c nonGoCase) start(t *testing.T, env ...string) *cgv1.Child {
	t.Helper()
	cg := cgv1.NewPair(t)
	cgv1.SetMemory(t, cg.MemChild, 512*mib)
	ch := cg.StartIn(t, c.prog, append(env, "FITGO=refresh=100ms")...)
	first, ok := ch.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", ch.Stderr)
	t.Logf("init: %s", first.MemLimit)
	require.Empty(t, first.Err)
	require.Equal(t, whole, first.GOMEMLIMIT, "alone, the whole limit")
	return ch
}

// do sends cmd and waits for the program to say it is done.
func do(t *testing.T, ch *cgv1.Child, cmd, name string) {
	t.Helper()
	ch.Send(t, cmd)
	ch.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		if s.Done != "" {
			require.Equal(t, name, s.Done, "%q", cmd)
		}
		return s.Done != ""
	})
}

// heldAndFreed holds the memory: the first value below the whole limit that
// is not a reading of half-touched memory (within 8 % above the target) must
// not be below it either; then frees it (backToWhole). The waits only cap a
// hung program.
func (c nonGoCase) heldAndFreed(t *testing.T, ch *cgv1.Child) {
	t.Helper()
	do(t, ch, c.hold, c.hold[:len(c.hold)-4])
	st, _ := ch.WaitFor(t, time.Now(), 20*time.Second, func(s testprog.State) bool {
		return float64(s.GOMEMLIMIT) <= float64(362*mib)*0.9*1.08
	})
	t.Logf("held: GOMEMLIMIT %d (%.1f MiB), outside Go %.1f MiB", st.GOMEMLIMIT, float64(st.GOMEMLIMIT)/mib, float64(st.NonGo)/mib)
	assert.True(t, within150(st.GOMEMLIMIT), "GOMEMLIMIT %d not within 8 %% of 0.9 × 362 MiB", st.GOMEMLIMIT)
	assert.True(t, st.MemLimitFollowing)

	backToWhole(t, ch, c.free, st.GOMEMLIMIT)
}

// backToWhole sends cmd, which frees memory, and waits until it is done and
// GOMEMLIMIT is the whole limit's again, at the first move from held or at
// the second: the kernel takes freed pages out of RssAnon as it unmaps them
// but uncharges them from the cgroup's usage in batches, so one reading in
// between may see them as the others'.
func backToWhole(t *testing.T, ch *cgv1.Child, cmd string, held int64) {
	t.Helper()
	done, moves := false, []int64{}
	ch.Send(t, cmd)
	ch.WaitFor(t, time.Now(), 20*time.Second, func(s testprog.State) bool {
		done = done || s.Done != ""
		if n := len(moves); s.GOMEMLIMIT != held && (n == 0 || moves[n-1] != s.GOMEMLIMIT) {
			moves = append(moves, s.GOMEMLIMIT)
		}
		return done && s.GOMEMLIMIT == whole
	})
	assert.LessOrEqual(t, len(moves), 2, "%s: back to the whole limit within two readings: %v", cmd, moves)
}

// TestRealKernelV1NonGoCgo (issue 24): a blank-import program built with cgo
// holds 150 MiB through C's malloc, every byte written, under a 512 MiB v1
// limit: GOMEMLIMIT goes to 0.9 × (512 − 150) MiB within 8 %, and back to
// 0.9 × 512 MiB in one move once it frees them.
func TestRealKernelV1NonGoCgo(t *testing.T) {
	cgv1.Require(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to build the cgo test program")
	}
	c := nonGoCase{prog: cgv1.Build(t, "./internal/rig/testprog/blankcgo"), hold: "cmalloc 150", free: "cfree"}
	ch := c.start(t)
	c.heldAndFreed(t, ch)
	c.heldAndFreed(t, ch) // and again, on the same process
}

// TestRealKernelV1NonGoMmap: the same through 150 MiB of anonymous mmap.
func TestRealKernelV1NonGoMmap(t *testing.T) {
	cgv1.Require(t)
	c := nonGoCase{prog: cgv1.Build(t, "./internal/rig/testprog/blank"), hold: "anon 150", free: "unanon"}
	ch := c.start(t)
	c.heldAndFreed(t, ch)
}

// TestRealKernelV1NonGoReleasedHeap: a program that grows its Go heap by
// 200 MiB and returns it to the OS (debug.FreeOSMemory, heap/released) keeps
// GOMEMLIMIT at 0.9 × 512 MiB (back to it within two readings, as after any
// free); and when it then maps 150 MiB
// outside Go, the value those readings give counts the 150 MiB but not the
// 200 MiB released, which are resident neither in the runtime's account nor
// in RssAnon. With GODEBUG=madvdontneed=0 the released pages stay in
// RssAnon until the kernel needs them (MADV_FREE), but on the inactive file
// list, out of the cgroup's usage that the headroom counts.
func TestRealKernelV1NonGoReleasedHeap(t *testing.T) {
	cgv1.Require(t)
	c := nonGoCase{prog: cgv1.Build(t, "./internal/rig/testprog/blank"), hold: "anon 150", free: "unanon"}
	for _, godebug := range []string{"", "madvdontneed=0"} {
		t.Run("GODEBUG="+godebug, func(t *testing.T) {
			ch := c.start(t, "GODEBUG="+godebug)
			for range 2 {
				do(t, ch, "heap 200", "heap")
				backToWhole(t, ch, "heapfree", whole)
			}
			c.heldAndFreed(t, ch)
		})
	}
}

// lazilyFreedAndRegrown makes the program grow its heap by 250 MiB, return
// it with MADV_FREE (it runs with GODEBUG=madvdontneed=0), back to the
// whole limit as after any free, and grow it again by 200 MiB: the runtime
// reuses the freed pages, which stay on the cgroup's inactive file list
// and in RssAnon, now written.
func lazilyFreedAndRegrown(t *testing.T, ch *cgv1.Child) {
	t.Helper()
	do(t, ch, "heap 250", "heap")
	backToWhole(t, ch, "heapfree", whole)
	do(t, ch, "heap 200", "heap")
}

// TestRealKernelV1NonGoLazyFree (issue 31, point 1): a blank-import program
// with GODEBUG=madvdontneed=0, alone under a 512 MiB v1 limit, frees a
// 250 MiB heap lazily and regrows it to 200 MiB. Then a 200 MiB co-process
// arrives in its cgroup: GOMEMLIMIT goes to 0.9 × (512 − 200) MiB, as in
// TestRealKernelV1Headroom, where it stayed at 0.9 × 512 MiB (the regrown
// pages, off the usage but in RssAnon and the runtime's account, cancelled
// the co-process). Or it holds 150 MiB through C's malloc: GOMEMLIMIT goes
// to 0.9 × (512 − 150) MiB within 8 %, where they were not seen. The waits
// only cap a hung program.
func TestRealKernelV1NonGoLazyFree(t *testing.T) {
	cgv1.Require(t)
	t.Run("co-process", func(t *testing.T) {
		c := nonGoCase{prog: cgv1.Build(t, "./internal/rig/testprog/blank")}
		side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
		cg := cgv1.NewPair(t)
		cgv1.SetMemory(t, cg.MemChild, 512*mib)
		ch := cg.StartIn(t, c.prog, "FITGO=refresh=100ms", "GODEBUG=madvdontneed=0")
		first, ok := ch.Next(t, 30*time.Second)
		require.True(t, ok, "no output; stderr: %s", ch.Stderr)
		require.Equal(t, whole, first.GOMEMLIMIT, "alone, the whole limit")
		lazilyFreedAndRegrown(t, ch)

		exact := int64(312 * mib * 9 / 10)
		startSidecar(t, side, cg.MemChild, "200")
		st, _ := ch.WaitFor(t, time.Now(), 20*time.Second, func(s testprog.State) bool { return s.GOMEMLIMIT <= exact })
		t.Logf("with the co-process: GOMEMLIMIT %.1f MiB, outside Go %.1f MiB", float64(st.GOMEMLIMIT)/mib, float64(st.NonGo)/mib)
		assert.LessOrEqual(t, st.GOMEMLIMIT, exact, "the co-process counts")
		assert.Greater(t, st.GOMEMLIMIT, exact-16*mib*9/10)
		assert.Zero(t, st.NonGo, "the co-process is not the program's memory outside Go")
	})
	t.Run("C memory", func(t *testing.T) {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("no gcc to build the cgo test program")
		}
		c := nonGoCase{prog: cgv1.Build(t, "./internal/rig/testprog/blankcgo"), hold: "cmalloc 150", free: "cfree"}
		ch := c.start(t, "GODEBUG=madvdontneed=0")
		lazilyFreedAndRegrown(t, ch)
		c.heldAndFreed(t, ch)
	})
}

//go:build linux

package fitgo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// TestRealKernelV1LeakGuard: a blank-import program leaks under a 256 MiB
// v1 limit (internal/rig/testprog/blankleak) until the cgroup OOM-kills it.
// With the leak guard, its Warn line appears and GOMEMLIMIT rises above
// 0.9 × 256 MiB, at most to the limit, before the kill; with
// FITGO=leakguard=off, GOMEMLIMIT stays at 0.9 × 256 MiB to the end. The
// waits only cap a hung program.
func TestRealKernelV1LeakGuard(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blankleak")
	policy := int64(256 * mib * 9 / 10)
	for _, tc := range []struct {
		name, fitgo string
		guard       bool
	}{{"guard", "refresh=100ms", true}, {"leakguard=off", "refresh=100ms,leakguard=off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cgv1.SetMemory(t, cg.MemChild, 256*mib)
			c := cg.StartIn(t, prog, "FITGO="+tc.fitgo)
			first, ok := c.Next(t, 30*time.Second)
			require.True(t, ok, "no output; stderr: %s", c.Stderr)
			require.Equal(t, policy, first.GOMEMLIMIT, first.MemLimit)

			// Every change until the program dies (its output ends).
			top, lines := first.GOMEMLIMIT, 1
			deadline := time.Now().Add(5 * time.Minute)
			for ended := false; !ended; {
				select {
				case s, more := <-c.States:
					if !more {
						ended = true
						break
					}
					top, lines = max(top, s.GOMEMLIMIT), lines+1
				case <-time.After(time.Until(deadline)):
					t.Fatalf("not killed within 5 minutes; GOMEMLIMIT up to %d; stderr: %s", top, c.Stderr)
				}
			}
			err := c.Cmd.Wait()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "exit: %v; stderr: %s", err, c.Stderr)
			ws, _ := exit.Sys().(syscall.WaitStatus)
			assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by the kernel: %v", err)
			if kills, ok := oomKills(t, cg.MemChild); ok {
				assert.Positive(t, kills, "the cgroup's oom_kill count")
			}
			t.Logf("%d state lines, GOMEMLIMIT up to %d; stderr:\n%s", lines, top, c.Stderr)
			if tc.guard {
				assert.Greater(t, top, policy, "the guard raised GOMEMLIMIT")
				assert.LessOrEqual(t, top, int64(256*mib), "never above the limit")
				assert.Contains(t, c.Stderr.String(), "WARN fitgo: the GC is pinned at GOMEMLIMIT (a leak?); the leak guard raises GOMEMLIMIT")
			} else {
				assert.Equal(t, policy, top, "GOMEMLIMIT kept")
				assert.NotContains(t, c.Stderr.String(), "leak guard")
			}
		})
	}
}

// TestRealKernelV1LeakGuardGivesBack: a blank-import program with a 250 ms
// refresh under a 256 MiB v1 limit (internal/rig/testprog/blanksaw), counted in
// its own ticks of 250 ms. A sawtooth, built to 210 MiB and then in 12 s
// teeth that fall to 160 MiB and rise back, takes no step in the five
// teeth after its first (a step the first took may be given back);
// a burst to 200 MiB with GOGC=off that took steps gives them back within
// 120 ticks of the heap's fall. The waits only cap a hung program.
func TestRealKernelV1LeakGuardGivesBack(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blanksaw")
	policy := int64(256 * mib * 9 / 10)
	start := func(t *testing.T, env ...string) func() testprog.State {
		cg := cgv1.NewPair(t)
		cgv1.SetMemory(t, cg.MemChild, 256*mib)
		c := cg.StartIn(t, prog, append(env, "FITGO=refresh=250ms")...)
		return func() testprog.State {
			s, ok := c.Next(t, time.Minute)
			require.True(t, ok, "no line within a minute (OOM-killed?); stderr: %s", c.Stderr)
			return s
		}
	}
	t.Run("sawtooth", func(t *testing.T) {
		next := start(t, "SHAPE=saw", "GOGC=100")
		s := next()
		for ; s.Phase != "tooth 2"; s = next() {
		}
		// A build slower than the window (a loaded host) may take a step,
		// which the teeth may give back (seen in CI at a load of 7); they
		// add none.
		t.Logf("GOMEMLIMIT %d after the first tooth (policy %d)", s.GOMEMLIMIT, policy)
		for at := s.GOMEMLIMIT; s.Phase != "tooth 7"; s = next() {
			require.LessOrEqual(t, s.GOMEMLIMIT, at, "tick %d, %s: a step", s.Tick, s.Phase)
			require.GreaterOrEqual(t, s.GOMEMLIMIT, policy, "tick %d, %s", s.Tick, s.Phase)
			at = s.GOMEMLIMIT
		}
	})
	t.Run("burst, GOGC=off", func(t *testing.T) {
		next := start(t, "SHAPE=burst", "GOGC=off")
		s := next()
		require.Equal(t, policy, s.GOMEMLIMIT)
		top := s.GOMEMLIMIT
		for ; s.Phase != "fallen"; s = next() {
			top = max(top, s.GOMEMLIMIT)
		}
		t.Logf("GOMEMLIMIT up to %d in the burst (policy %d)", top, policy)
		for fell := s.Tick; s.GOMEMLIMIT != policy; s = next() {
			require.Less(t, s.Tick-fell, 120, "the steps not given back: GOMEMLIMIT %d", s.GOMEMLIMIT)
		}
	})
}

// oomKills reads oom_kill from the v1 cgroup's memory.oom_control, where
// the kernel has it.
func oomKills(t *testing.T, dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^oom_kill (\d+)$`).FindSubmatch(data)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n, true
}

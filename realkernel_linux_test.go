//go:build linux

package fitgo

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// The real-kernel tests run a program that blank-imports fitgo in a child
// cgroup whose parent carries the limits, on a host with cgroup v1 cpu and
// memory hierarchies (this project's CI machines), as root (package cgv1).
// They skip elsewhere and say why.

const mib = 1 << 20

// TestRealKernelV1BlankImport: the spec's scenario. The parent has 0.5 CPU
// and 512 MiB, the child none: the program reports GOMAXPROCS 1 and
// GOMEMLIMIT 0.9 × 512 MiB; when the parent is resized to 2 CPUs and
// 384 MiB while it runs, it follows. Run with
// the default interval (one second) and with FITGO=refresh=200ms. That a
// change is applied at the next reading is the refresh tests' part (counted
// ticks); here the wait is only a cap for a hung program.
func TestRealKernelV1BlankImport(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	for _, tc := range []struct {
		name     string
		env      []string
		interval time.Duration
	}{
		{"default interval", nil, time.Second},
		{"FITGO=refresh=200ms", []string{"FITGO=refresh=200ms"}, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cg.SetParentCPU(t, 50000)
			cg.SetParentMemory(t, 512*mib)
			c := cg.StartIn(t, prog, tc.env...)

			first, ok := c.Next(t, 10*time.Second)
			require.True(t, ok, "no output; stderr: %s", c.Stderr)
			t.Logf("init: %s | %s", first.MaxProcs, first.MemLimit)
			assert.Empty(t, first.Err)
			assert.Equal(t, 1, first.GOMAXPROCS)
			assert.Equal(t, int64(512*mib*9/10), first.GOMEMLIMIT) // 483183820
			assert.Contains(t, first.MaxProcs, "CPU limit 0.5 cores from "+cg.CPUParent)
			assert.Contains(t, first.MemLimit, "memory.limit_in_bytes 512 MiB from "+cg.MemParent)
			assert.True(t, first.Changed)
			assert.True(t, first.MaxProcsFollowing)
			assert.True(t, first.MemLimitFollowing)
			assert.True(t, first.MemLimitEvents, "Status reads memory.failcnt and oom_kill of %s", cg.MemParent)

			// Resize the parent while the program runs.
			cg.SetParentCPU(t, 200000)
			cg.SetParentMemory(t, 384*mib)
			resized := time.Now()
			s, took := c.WaitFor(t, resized, 30*time.Second, func(s testprog.State) bool {
				return s.GOMAXPROCS == 2 && s.GOMEMLIMIT == 384*mib*9/10
			})
			t.Logf("followed the resize in %v (interval %v): GOMAXPROCS %d, GOMEMLIMIT %d", took, tc.interval, s.GOMAXPROCS, s.GOMEMLIMIT)
			assert.True(t, s.MaxProcsFollowing)
			assert.True(t, s.MemLimitFollowing)

			// One start-up line through the default logger (stderr), at the
			// first reading, then one Info line per change made by the
			// refresh loop.
			c.Stdin.Close()
			c.Cmd.Wait()
			lines := strings.Split(strings.TrimSpace(c.Stderr.String()), "\n")
			require.Len(t, lines, 3, "stderr: %s", c.Stderr)
			assert.Contains(t, lines[0], "INFO fitgo: fitted the Go runtime to the container")
			assert.Contains(t, lines[0], "GOMAXPROCS.after=1")
			assert.Contains(t, lines[0], `GOMEMLIMIT.after="460.8 MiB (483183820 bytes)"`)
			assert.Contains(t, lines[1]+lines[2], "INFO fitgo: GOMAXPROCS updated: CPU limit changed GOMAXPROCS=2 before=1")
			assert.Contains(t, lines[1]+lines[2], `INFO fitgo: GOMEMLIMIT updated: memory limit changed GOMEMLIMIT="345.6 MiB (362387865 bytes)" before="460.8 MiB (483183820 bytes)"`)
		})
	}
}

// TestRealKernelV1HandOver: the program sets GOMEMLIMIT itself after
// start-up; fitgo stops managing it and never overwrites it, even when the
// limit changes.
func TestRealKernelV1HandOver(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t)
	cg.SetParentCPU(t, 50000)
	cg.SetParentMemory(t, 512*mib)
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms")
	first, ok := c.Next(t, 10*time.Second)
	require.True(t, ok, "stderr: %s", c.Stderr)
	require.Equal(t, int64(483183820), first.GOMEMLIMIT)

	c.Send(t, "setmem 100000000")
	s, _ := c.WaitFor(t, time.Now(), 5*time.Second, func(s testprog.State) bool { return !s.MemLimitFollowing })
	assert.Equal(t, int64(100000000), s.GOMEMLIMIT)
	assert.Contains(t, s.MemLimitReason, "outside fitgo")
	cg.SetParentMemory(t, 256*mib)
	cg.SetParentCPU(t, 200000)
	// GOMAXPROCS still follows; the memory limit stays the program's.
	s, _ = c.WaitFor(t, time.Now(), 5*time.Second, func(s testprog.State) bool { return s.GOMAXPROCS == 2 })
	assert.Equal(t, int64(100000000), s.GOMEMLIMIT)
	// Several refresh intervals later, still the program's value.
	for {
		s, more := c.Next(t, 500*time.Millisecond)
		if !more {
			break
		}
		assert.Equal(t, int64(100000000), s.GOMEMLIMIT)
	}
}

// TestRealKernelV1Rounding: FITGO=rounding=... picks the blank import's
// rounding rule. The parent has 1.25 CPUs, where the three rules differ from
// floor's 1 only for ceil, and 1.5, where nearest joins ceil.
func TestRealKernelV1Rounding(t *testing.T) {
	cgv1.Require(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs at least 2 CPUs: with one, every rule gives 1")
	}
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	for _, tc := range []struct {
		quota   int // µs per 100 ms period
		setting string
		want    int
	}{
		{125000, "rounding=floor", 1},
		{125000, "rounding=nearest", 1},
		{125000, "rounding=ceil", 2},
		{150000, "rounding=floor", 1},
		{150000, "rounding=nearest", 2},
		{150000, "rounding=ceil", 2},
	} {
		t.Run(fmt.Sprintf("%d/%s", tc.quota, tc.setting), func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cg.SetParentCPU(t, tc.quota)
			c := cg.StartIn(t, prog, "FITGO="+tc.setting)
			first, ok := c.Next(t, 10*time.Second)
			require.True(t, ok, "stderr: %s", c.Stderr)
			assert.Equal(t, tc.want, first.GOMAXPROCS, first.MaxProcs)
			assert.Contains(t, first.MaxProcs, "policy "+strings.TrimPrefix(tc.setting, "rounding=")+", min 1")
		})
	}
}

// TestRealKernelV1StartupEnvironment: an init that runs before fitgo's
// unsets GOMAXPROCS=2 and sets GOMEMLIMIT=1GiB. The runtime went by the
// environment the process started with, and so does fitgo: it keeps the
// operator's GOMAXPROCS 2 and sets GOMEMLIMIT from the 512 MiB limit. (Before,
// fitgo read the environment at its own init: it overrode GOMAXPROCS and left
// GOMEMLIMIT alone as "set in the environment".)
func TestRealKernelV1StartupEnvironment(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blankunset")
	cg := cgv1.NewPair(t)
	cg.SetParentCPU(t, 50000)
	cg.SetParentMemory(t, 512*mib)
	c := cg.StartIn(t, prog, "GOMAXPROCS=2")
	first, ok := c.Next(t, 10*time.Second)
	require.True(t, ok, "stderr: %s", c.Stderr)
	assert.Equal(t, 2, first.GOMAXPROCS, first.MaxProcs)
	assert.Contains(t, first.MaxProcs, "environment")
	assert.Equal(t, int64(512*mib*9/10), first.GOMEMLIMIT, first.MemLimit)
}

// TestRealKernelV1FollowsAfterFailedOpen: the process has three free file
// descriptors while the refresh loop first opens its files ("too many open
// files"), then frees them; a resize after that is still followed. (Before,
// the loop kept its first open error for good and never followed again.)
func TestRealKernelV1FollowsAfterFailedOpen(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blankhog")
	cg := cgv1.NewPair(t)
	cg.SetParentCPU(t, 50000)
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms")
	start := time.Now()
	first, ok := c.Next(t, 10*time.Second)
	require.True(t, ok, "stderr: %s", c.Stderr)
	assert.Equal(t, 1, first.GOMAXPROCS, first.MaxProcs)
	// The loop's failed open is logged (a Warn line through slog.Default).
	for !strings.Contains(c.Stderr.String(), "too many open files") {
		require.Less(t, time.Since(start), 10*time.Second, "no failed open within 10s; stderr: %s", c.Stderr)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, c.Cmd.Process.Signal(syscall.SIGUSR1))
	cg.SetParentCPU(t, 200000)
	resized := time.Now()
	s, took := c.WaitFor(t, resized, 20*time.Second, func(s testprog.State) bool { return s.GOMAXPROCS == 2 })
	t.Logf("followed the resize %v after the descriptors were freed: %s", took, s.MaxProcsReason)
	assert.True(t, s.MaxProcsFollowing)
}

// TestRealKernelV1Disabled: FITGO=off leaves everything alone, silently.
func TestRealKernelV1Disabled(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg := cgv1.NewPair(t)
	cg.SetParentCPU(t, 50000)
	cg.SetParentMemory(t, 512*mib)
	c := cg.StartIn(t, prog, "FITGO=off")
	first, ok := c.Next(t, 10*time.Second)
	require.True(t, ok, "stderr: %s", c.Stderr)
	assert.Equal(t, runtime.NumCPU(), first.GOMAXPROCS, "the runtime's own value")
	assert.Equal(t, int64(9223372036854775807), first.GOMEMLIMIT)
	assert.False(t, first.Changed)
	assert.Contains(t, first.MaxProcs, "turned off by FITGO=off")
	c.Stdin.Close()
	c.Cmd.Wait()
	assert.Empty(t, c.Stderr.String())
}

// TestRealKernelV1RuntimeContainerSupport runs a program whose Go runtime
// has its own container support on (as with a go 1.25+ line).
//
// With the limit on the parent, the runtime, which reads the leaf only,
// misses it; fitgo sets GOMAXPROCS from it.
//
// With the limit on the leaf, where fitgo agrees with the runtime, fitgo
// must not call runtime.GOMAXPROCS, so the runtime's own updates stay on.
// They are observed by shrinking the CPU affinity to one CPU: the runtime
// then lowers GOMAXPROCS to 1 by itself. The control run pins GOMAXPROCS
// (as a call to runtime.GOMAXPROCS would) and shows that the runtime then
// does not follow: the test can tell the two apart.
func TestRealKernelV1RuntimeContainerSupport(t *testing.T) {
	cgv1.Require(t)
	if !runtimeContainerSupport {
		t.Skip("the Go runtime has no container support before Go 1.25")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs at least 2 CPUs")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("needs taskset (util-linux)")
	}
	prog := cgv1.Build(t, "./internal/rig/testprog/blankgo125")

	t.Run("parent limit the runtime misses", func(t *testing.T) {
		cg := cgv1.NewPair(t)
		cg.SetParentCPU(t, 50000)
		c := cg.StartIn(t, prog)
		first, ok := c.Next(t, 10*time.Second)
		require.True(t, ok, "stderr: %s", c.Stderr)
		t.Logf("init: %s", first.MaxProcs)
		assert.Equal(t, 1, first.GOMAXPROCS)
		assert.Contains(t, first.MaxProcs, fmt.Sprintf("GOMAXPROCS %d -> 1", runtime.NumCPU()))
	})

	for _, pin := range []bool{false, true} {
		name := "leaf limit: the runtime keeps updating"
		if pin {
			name = "control: pinned, the runtime stops updating"
		}
		t.Run(name, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cg.SetChildCPU(t, 100000*runtime.NumCPU())
			c := cg.StartIn(t, prog)
			first, ok := c.Next(t, 10*time.Second)
			require.True(t, ok, "stderr: %s", c.Stderr)
			t.Logf("init: %s", first.MaxProcs)
			require.Equal(t, runtime.NumCPU(), first.GOMAXPROCS)
			assert.False(t, first.Changed)
			assert.Contains(t, first.MaxProcs, "left to the Go runtime, whose own updates stay on")
			if pin {
				c.Send(t, "pin")
				c.WaitFor(t, time.Now(), 10*time.Second, func(s testprog.State) bool { return s.Acks == 1 })
			}
			out, err := exec.Command(taskset, "-a", "-p", "1", strconv.Itoa(c.Cmd.Process.Pid)).CombinedOutput()
			require.NoError(t, err, "taskset: %s", out)
			changed := time.Now()
			if pin {
				// The runtime re-reads the affinity about once a second: up to
				// the state 2.5 s of the child's time after the change, over two
				// such readings, every state keeps every CPU.
				c.Send(t, "report 2500")
				for s := (testprog.State{}); !s.Report; {
					var more bool
					s, more = c.Next(t, 10*time.Second)
					require.True(t, more, "no report (stderr: %s)", c.Stderr)
					assert.Equal(t, runtime.NumCPU(), s.GOMAXPROCS, "pinned: the runtime does not follow the affinity")
				}
				return
			}
			s, took := c.WaitFor(t, changed, 5*time.Second, func(s testprog.State) bool { return s.GOMAXPROCS == 1 })
			t.Logf("the runtime followed the affinity change by itself in %v; fitgo: following=%v %s", took, s.MaxProcsFollowing, s.MaxProcsReason)
			// fitgo predicts the runtime's value with the current affinity:
			// the change is the runtime's own, and fitgo keeps following
			// (it used to take it for someone else's and stop for good).
			assert.True(t, s.MaxProcsFollowing, s.MaxProcsReason)
			c.Send(t, "report 2500") // over two refresh ticks
			for !s.Report {
				var more bool
				s, more = c.Next(t, 10*time.Second)
				require.True(t, more, "no report (stderr: %s)", c.Stderr)
				assert.True(t, s.MaxProcsFollowing, "still following: %s", s.MaxProcsReason)
			}
		})
	}
}

// TestRealKernelV1KeepsEarlierLimit: a library set the memory limit in an
// init that ran before fitgo's; the blank import keeps it and does not
// follow the memory limit, while it still manages GOMAXPROCS.
func TestRealKernelV1KeepsEarlierLimit(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blankpreset")
	cg := cgv1.NewPair(t)
	cg.SetParentCPU(t, 50000)
	cg.SetParentMemory(t, 512*mib)
	c := cg.StartIn(t, prog)
	first, ok := c.Next(t, 10*time.Second)
	require.True(t, ok, "stderr: %s", c.Stderr)
	t.Logf("init: %s | %s", first.MaxProcs, first.MemLimit)
	assert.Equal(t, int64(300*mib), first.GOMEMLIMIT)
	assert.Contains(t, first.MemLimit, "the memory limit is already 300 MiB: set by the program or a library, and kept")
	assert.False(t, first.MemLimitFollowing)
	assert.Equal(t, 1, first.GOMAXPROCS)
	assert.True(t, first.MaxProcsFollowing)
}

// TestRealKernelV1MemoryLimitEnv: FITGO_MEMORY_LIMIT as a Kubernetes
// quantity bounds the parent's 512 MiB; a value that is not a positive one
// is ignored, GOMEMLIMIT fitted to the cgroup's limit all the same, with a
// Warn line whose message is the error before the start-up line on stderr
// (GOMAXPROCS is unchanged: no CPU limit), once; so is one that leaves less
// than the policy's minimum (17Mi), and a plain number of bytes below the
// cgroup's limit (33554432: 32Gi with divisor 1Ki) is kept with a Warn line
// (issue 31, point 5).
func TestRealKernelV1MemoryLimitEnv(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	for _, tc := range []struct {
		env  string
		want int64
		warn string // the Warn line's message after "memlimit: "; "": none
	}{
		{"256Mi", 256 * mib * 9 / 10, ""},
		{"1e9", 512 * mib * 9 / 10, `FITGO_MEMORY_LIMIT: "1e9": want bytes, at least 1Mi`},
		{"0", 512 * mib * 9 / 10, `FITGO_MEMORY_LIMIT: "0": want bytes, at least 1Mi`},
		{"17Mi", 512 * mib * 9 / 10, "FITGO_MEMORY_LIMIT 17 MiB leaves less than the policy's minimum GOMEMLIMIT (16 MiB); ignored"},
		{"33554432", 32 * mib * 9 / 10, `FITGO_MEMORY_LIMIT=33554432 (32 MiB) is below the memory.limit_in_bytes limit 512 MiB`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cg.SetParentMemory(t, 512*mib)
			c := cg.StartIn(t, prog, "FITGO_MEMORY_LIMIT="+tc.env)
			first, ok := c.Next(t, 10*time.Second)
			require.True(t, ok, "stderr: %s", c.Stderr)
			assert.Equal(t, tc.want, first.GOMEMLIMIT, first.MemLimit)
			lines := startupLines(t, c)
			if tc.warn != "" {
				require.Len(t, lines, 2, c.Stderr)
				assert.Contains(t, lines[0], "WARN fitgo: memlimit: "+tc.warn)
			}
			assert.Contains(t, lines[len(lines)-1], "INFO fitgo: fitted the Go runtime to the container")
		})
	}
}

// startupLines waits for the blank import's start-up lines on c's stderr,
// logged at its first reading, and returns them once the program has
// exited. The wait is only a cap for a hung program.
func startupLines(t *testing.T, c *cgv1.Child) []string {
	t.Helper()
	for start := time.Now(); !strings.Contains(c.Stderr.String(), "fitgo: fitted the Go runtime"); time.Sleep(20 * time.Millisecond) {
		require.Less(t, time.Since(start), 10*time.Second, "no start-up line within 10s; stderr: %s", c.Stderr)
	}
	c.Stdin.Close()
	c.Cmd.Wait()
	return strings.Split(strings.TrimSpace(c.Stderr.String()), "\n")
}

// TestRealKernelV1Reserve: FITGO=reserve takes memory that fitgo cannot see
// off the parent's 512 MiB before the ratio: 0.9 × 384 MiB with 128Mi. One
// that leaves less than the policy's minimum (496Mi, 512Mi, 600Mi, 7Ei) is
// ignored, named in a Warn line of its own, and the whole limit fitted
// (issue 31, point 5).
func TestRealKernelV1Reserve(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	for _, reserve := range []string{"128Mi", "496Mi", "512Mi", "600Mi", "7Ei"} {
		t.Run(reserve, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cg.SetParentMemory(t, 512*mib)
			c := cg.StartIn(t, prog, "FITGO=reserve="+reserve)
			first, ok := c.Next(t, 10*time.Second)
			require.True(t, ok, "stderr: %s", c.Stderr)
			lines := startupLines(t, c)
			if reserve == "128Mi" {
				assert.Equal(t, int64(384*mib*9/10), first.GOMEMLIMIT, first.MemLimit)
				assert.Contains(t, first.MemLimit, "− reserve 128 MiB")
				assert.Len(t, lines, 1, c.Stderr)
				return
			}
			assert.Equal(t, whole, first.GOMEMLIMIT, first.MemLimit)
			require.Len(t, lines, 2, c.Stderr)
			assert.Contains(t, lines[0], "WARN fitgo: memlimit: the reserve (FITGO=reserve, Reserve) of ")
			assert.Contains(t, lines[1], "INFO fitgo: fitted the Go runtime to the container")
		})
	}
}

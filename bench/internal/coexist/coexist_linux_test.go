package coexist

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

const mib = 1 << 20

// timeout bounds each wait: generous, since the test polls the program's
// output and never asserts on the clock.
const timeout = 30 * time.Second

// TestCoexistV1 runs prog in a real v1 cgroup with 1.5 CPUs and 512 MiB on
// the process's own cgroup (automaxprocs reads only that one). fitgo wants
// GOMAXPROCS 2 (ceil), automaxprocs sets 1 (floor); with AUTOMEMLIMIT=0.8,
// automemlimit sets 0.8 × 512 MiB where fitgo wants 0.9 ×.
func TestCoexistV1(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "github.com/fitgo/fitgo/bench/internal/coexist/prog")
	fitgoMem := int64(512 * mib * 9 / 10) // 483183820
	start := func(t *testing.T, env ...string) (*cgv1.Pair, *cgv1.Child) {
		cg := cgv1.NewPair(t)
		cg.SetChildCPU(t, 150000)
		cgv1.SetMemory(t, cg.MemChild, 512*mib)
		return cg, cg.StartIn(t, prog, env...)
	}

	t.Run("hand-over names them", func(t *testing.T) {
		_, c := start(t, "AUTOMEMLIMIT=0.8")
		s, _ := c.WaitFor(t, time.Now(), timeout, func(s testprog.State) bool {
			return !s.MaxProcsFollowing && !s.MemLimitFollowing
		})
		assert.Equal(t, 1, s.GOMAXPROCS, "automaxprocs' value stays")
		assert.Equal(t, int64(429496729), s.GOMEMLIMIT, "automemlimit's value stays")
		assert.Contains(t, s.MaxProcsReason, "GOMAXPROCS was changed from 2 to 1 by another library, matching automaxprocs' floor of 1.5 cores; no longer managed")
		assert.Contains(t, s.MemLimitReason, "by another library, matching automemlimit's 0.8 × 512 MiB; no longer managed")
		c.Stdin.Close()
		c.Cmd.Wait()
		assert.Contains(t, c.Stderr.String(), `by="another library, matching automaxprocs' floor of 1.5 cores"`)
	})

	t.Run("same value: nothing to hand over", func(t *testing.T) {
		// With its defaults automemlimit computes fitgo's own value.
		_, c := start(t)
		s, _ := c.WaitFor(t, time.Now(), timeout, func(s testprog.State) bool { return !s.MaxProcsFollowing })
		assert.Contains(t, s.MaxProcsReason, "matching automaxprocs' floor of 1.5 cores")
		assert.Equal(t, fitgoMem, s.GOMEMLIMIT)
		assert.True(t, s.MemLimitFollowing)
	})

	t.Run("FITGO=insist=on keeps fitgo's values through a resize", func(t *testing.T) {
		cg, c := start(t, "FITGO=insist=on", "AUTOMEMLIMIT=0.8")
		s, _ := c.WaitFor(t, time.Now(), timeout, func(s testprog.State) bool {
			return s.GOMAXPROCS == 2 && s.GOMEMLIMIT == fitgoMem &&
				strings.Contains(s.MaxProcsReason, "put its value back") && strings.Contains(s.MemLimitReason, "put its value back")
		})
		assert.True(t, s.MaxProcsFollowing)
		assert.True(t, s.MemLimitFollowing)
		assert.Contains(t, s.MaxProcsReason, "matching automaxprocs' floor of 1.5 cores")
		assert.Contains(t, s.MemLimitReason, "matching automemlimit's 0.8 × 512 MiB")

		cg.SetChildCPU(t, 50000)
		cgv1.SetMemory(t, cg.MemChild, 256*mib)
		s, _ = c.WaitFor(t, time.Now(), timeout, func(s testprog.State) bool {
			return s.GOMAXPROCS == 1 && s.GOMEMLIMIT == 256*mib*9/10
		})
		assert.True(t, s.MaxProcsFollowing)
		assert.True(t, s.MemLimitFollowing)

		cg.SetChildCPU(t, 150000)
		cgv1.SetMemory(t, cg.MemChild, 512*mib)
		s, _ = c.WaitFor(t, time.Now(), timeout, func(s testprog.State) bool {
			return s.GOMAXPROCS == 2 && s.GOMEMLIMIT == fitgoMem
		})
		assert.True(t, s.MaxProcsFollowing)
		assert.True(t, s.MemLimitFollowing)
		c.Stdin.Close()
		c.Cmd.Wait()
		assert.Equal(t, 1, strings.Count(c.Stderr.String(), "fitgo: GOMAXPROCS changed by someone else; fitgo puts its value back (insist)"), c.Stderr.String())
		assert.Equal(t, 1, strings.Count(c.Stderr.String(), "fitgo: GOMEMLIMIT changed by someone else; fitgo puts its value back (insist)"), c.Stderr.String())
	})
}

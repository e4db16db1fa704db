package vmtest

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
	"github.com/fitgo/fitgo/maxprocs"
)

const mib = 1 << 20

// TestCgroupV2 boots the guest once with cgroup v2 and checks the scenarios of
// guest/v2.sh.
func TestCgroupV2(t *testing.T) {
	t.Parallel()
	c := boot(t, "v2")
	const cg = "/sys/fs/cgroup"

	t.Run("kernel", func(t *testing.T) {
		var f filesResult
		one(t, c, "v2/kernel", "files", &f)
		assert.NotEmpty(t, f.Files["/proc/sys/kernel/osrelease"], "guest kernel release")
		require.Empty(t, f.Errors)
		assert.Equal(t, "0::/\n", f.Files["/proc/self/cgroup"])
		assert.Contains(t, f.Files[cg+"/cgroup.controllers"], "cpu")
		assert.Equal(t, "cpu memory\n", f.Files[cg+"/cgroup.subtree_control"])
	})

	// 1. cpu.max 150000 100000 and memory.max 512M on the leaf.
	t.Run("1-leaf", func(t *testing.T) {
		var r report.Read
		one(t, c, "v2/leaf", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V2, dir: cg + "/leaf",
			cores: 1.5, cpuSource: cg + "/leaf",
			max: 512 * mib, maxSource: cg + "/leaf",
		})

		// The blank import: ceil(1.5) = 2 and 90% of 512 MiB.
		var b report.Blank
		one(t, c, "v2/leaf", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 2, before: guestCPUs, cores: 1.5, cpuSource: cg + "/leaf",
			mem: 512 * mib, memFrom: "memory.max", memSource: cg + "/leaf",
		})
		assert.False(t, b.Fitgo.MaxProcs.Runtime.ContainerAware, "go 1.23 main module: containermaxprocs=0")

		// maxprocs.Apply with the Ceil rounding: ceil(1.5) = 2.
		var ceil report.Ceil
		one(t, c, "v2/leaf", "ceil", &ceil)
		assert.Empty(t, ceil.MaxProcs.Err)
		assert.Equal(t, 2, ceil.MaxProcs.After)
		assert.Equal(t, 2, ceil.Runtime.GOMAXPROCS)
		assert.Equal(t, maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 1}, ceil.MaxProcs.Policy, "ceil, min 1")

		// The blank import with GODEBUG=containermaxprocs=1,updatemaxprocs=1:
		// the runtime chose 2, fitgo's value too, so fitgo leaves it (and the
		// runtime's updates on).
		var bg report.Blank
		one(t, c, "v2/leaf-godebug", "report", &bg)
		checkBlank(t, bg, wantBlank{
			procs: 2, before: 2, cores: 1.5, cpuSource: cg + "/leaf",
			mem: 512 * mib, memFrom: "memory.max", memSource: cg + "/leaf",
		})
		assert.True(t, bg.Fitgo.MaxProcs.Runtime.ContainerAware)
		assert.True(t, bg.Fitgo.MaxProcs.Runtime.Updates)

		// The runtime alone, with Go 1.25+ defaults.
		var rt runtimeResult
		one(t, c, "v2/leaf", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.NumCPU)
		assert.Contains(t, rt.DefaultGODEBUG, "containermaxprocs=1")
		assert.Contains(t, rt.DefaultGODEBUG, "updatemaxprocs=1")
		// The runtime's own rule: ceil(1.5) = 2, and never below 2.
		assert.Equal(t, 2, rt.GOMAXPROCS)
		assert.Equal(t, int64(math.MaxInt64), rt.GOMEMLIMIT)
	})

	// 2. 1 CPU and 256 MiB on the parent only.
	t.Run("2-parent", func(t *testing.T) {
		var f filesResult
		one(t, c, "v2/parent", "files", &f)
		assert.Equal(t, "max 100000\n", f.Files[cg+"/parent/leaf/cpu.max"])
		assert.Equal(t, "max\n", f.Files[cg+"/parent/leaf/memory.max"])

		var r report.Read
		one(t, c, "v2/parent", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V2, dir: cg + "/parent/leaf",
			cores: 1, cpuSource: cg + "/parent",
			max: 256 * mib, maxSource: cg + "/parent",
		})

		var b report.Blank
		one(t, c, "v2/parent", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 1, before: guestCPUs, cores: 1, cpuSource: cg + "/parent",
			mem: 256 * mib, memFrom: "memory.max", memSource: cg + "/parent",
		})

		// The runtime reads the leaf only: it misses the parent's 1 CPU and
		// uses all 4 vCPUs.
		var rt runtimeResult
		one(t, c, "v2/parent", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.GOMAXPROCS)
	})

	// 3. A private cgroup namespace rooted at cgns/ns (2.5 CPUs, 320 MiB).
	t.Run("3-cgns-remount", func(t *testing.T) {
		// cgroup2 mounted again inside the namespace: the mount's root is the
		// namespace's root.
		var f filesResult
		one(t, c, "v2/cgns-remount", "files", &f)
		assert.Equal(t, "0::/\n", f.Files["/proc/self/cgroup"])
		assert.Equal(t, "/", mountRoot(f.Files["/proc/self/mountinfo"], cg))

		// The memory.high of 400 MiB on cgns, above the namespace's root, is
		// invisible from inside.
		var r report.Read
		one(t, c, "v2/cgns-remount", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V2, dir: cg,
			cores: 2.5, cpuSource: cg,
			max: 320 * mib, maxSource: cg,
		})
		assert.Equal(t, "/", r.Limits.CPU.Path)
		assert.Equal(t, "/", r.Limits.CPU.MountRoot)

		var b report.Blank
		one(t, c, "v2/cgns-remount", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 3, before: guestCPUs, cores: 2.5, cpuSource: cg,
			mem: 320 * mib, memFrom: "memory.max", memSource: cg,
		})

		var rt runtimeResult
		one(t, c, "v2/cgns-remount", "runtime", &rt)
		assert.Equal(t, 3, rt.GOMAXPROCS, "the runtime: ceil(2.5)")
	})
	t.Run("3-cgns-outer", func(t *testing.T) {
		// The mount made outside the namespace: the kernel shows its root as
		// "/../..", two levels above the namespace's root, so the process's
		// cgroup directory cannot be named through it. fitgo reports no
		// limit and no error; so does the runtime.
		var f filesResult
		one(t, c, "v2/cgns-outer", "files", &f)
		assert.Equal(t, "0::/\n", f.Files["/proc/self/cgroup"])
		assert.Equal(t, "/../..", mountRoot(f.Files["/proc/self/mountinfo"], cg))

		var r report.Read
		one(t, c, "v2/cgns-outer", "read", &r)
		checkLimits(t, r.Limits, wantLimits{})
		assert.Equal(t, "/", r.Limits.CPU.Path)

		var b report.Blank
		one(t, c, "v2/cgns-outer", "report", &b)
		checkBlank(t, b, wantBlank{procs: guestCPUs, before: guestCPUs})

		var rt runtimeResult
		one(t, c, "v2/cgns-outer", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.GOMAXPROCS)
	})

	// 4. memory.high 300M below memory.max 512M.
	t.Run("4-high", func(t *testing.T) {
		var r report.Read
		one(t, c, "v2/high", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V2, dir: cg + "/high",
			max: 512 * mib, maxSource: cg + "/high",
			high: 300 * mib, highSource: cg + "/high",
		})

		var b report.Blank
		one(t, c, "v2/high", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: guestCPUs, before: guestCPUs,
			mem: 300 * mib, memFrom: "memory.high", memSource: cg + "/high",
		})
	})

	// 5. From 1 CPU and 512 MiB to 3 CPUs and 384 MiB while the blank
	// import's refresh loop runs.
	t.Run("5-resize", func(t *testing.T) {
		var w report.Watch
		one(t, c, "v2/resize", "watch", &w)
		var wr struct {
			Start int64 `json:"start_unix_nano"`
			End   int64 `json:"end_unix_nano"`
		}
		one(t, c, "v2/resize", "write", &wr)
		checkResize(t, w, wr.Start, wr.End,
			report.Sample{GOMAXPROCS: 1, GOMEMLIMIT: fitgoMemLimit(512 * mib)},
			report.Sample{GOMAXPROCS: 3, GOMEMLIMIT: fitgoMemLimit(384 * mib)})
	})

	// 7. A 200 MiB sidecar under the 512 MiB limit, in a sibling cgroup and
	// in the program's own: GOMEMLIMIT ≈ 0.9 × (512 − 200) MiB (the
	// sidecar's runtime and kernel memory count too: within 16 MiB × 0.9),
	// then 0.9 × 512 MiB once the sidecar has freed its memory.
	for _, tc := range []struct{ layout, source string }{
		{"sibling", cg + "/hr-sibling"},
		{"own", cg + "/hr-own"},
	} {
		t.Run("8-headroom-"+tc.layout, func(t *testing.T) {
			var w report.Watch
			one(t, c, "v2/headroom-"+tc.layout, "watch", &w)
			require.NotEmpty(t, w.Samples)
			exact := fitgoMemLimit(312 * mib)
			first := w.Samples[0].GOMEMLIMIT
			assert.LessOrEqual(t, first, exact)
			assert.Greater(t, first, exact-16*mib*9/10)
			// The status at the end: the whole limit, no one else.
			ml := w.Fitgo.MemLimit
			assert.Equal(t, tc.source, ml.Source)
			assert.Equal(t, "memory.max", ml.From)
			assert.Equal(t, int64(512*mib), ml.Limit)
			assert.Zero(t, ml.Others)
			assert.Equal(t, fitgoMemLimit(512*mib), w.Samples[len(w.Samples)-1].GOMEMLIMIT, "raised once the sidecar freed its memory: %+v", w.Samples)
			assert.True(t, w.Fitgo.MemLimitStatus.Following)
			assert.Equal(t, tc.source, w.Fitgo.MemLimitStatus.Source)
			assert.True(t, w.Fitgo.MemLimitStatus.HasEvents, "Status reads memory.events of %s", tc.source)
		})
	}

	// 6. Two spinning threads for 2 s under 0.5 CPU.
	t.Run("6-throttle", func(t *testing.T) {
		var b report.Burn
		one(t, c, "v2/throttle", "burn", &b)
		checkLimits(t, b.Limits, wantLimits{version: cgroup.V2, dir: cg + "/throttle", cores: 0.5, cpuSource: cg + "/throttle"})
		checkThrottle(t, b, 0.5, "throttled_usec", time.Microsecond)
		// Pressure of the process's cgroup: the threads waited for the quota.
		p := b.Stats.Pressure
		assert.Equal(t, cg+"/throttle", p.Dir)
		assert.True(t, p.CPU.HasSome, "cpu.pressure")
		assert.Positive(t, p.CPU.Some.Total, "cpu pressure total")
		assert.Positive(t, p.CPU.Some.Avg10, "cpu pressure avg10")
		assert.True(t, p.Memory.HasSome && p.IO.HasSome, "memory.pressure and io.pressure")
		m := b.Stats.Memory
		assert.Equal(t, cg+"/throttle", m.Dir)
		assert.Positive(t, m.Usage)
		assert.LessOrEqual(t, m.WorkingSet, m.Usage)
		assert.True(t, m.HasEvents)
	})

	// 7. fitgoprom.NewCollector in a pedantic registry after two goroutines
	// spun for 1.5 s under 0.5 CPU and 256 MiB.
	t.Run("7-prom", func(t *testing.T) {
		var p report.Prom
		one(t, c, "v2/prom", "prom", &p)
		require.Empty(t, p.GatherErr)
		s := p.Samples
		assert.Equal(t, 0.5, s["fitgo_cpu_limit_cores"])
		assert.Equal(t, float64(256*mib), s["fitgo_memory_limit_bytes"])
		for _, name := range []string{"fitgo_cpu_cfs_periods_total", "fitgo_cpu_cfs_throttled_periods_total",
			"fitgo_cpu_cfs_throttled_seconds_total", "fitgo_cpu_usage_seconds_total", "fitgo_memory_usage_bytes",
			`fitgo_pressure_stalled_seconds_total{kind="some",resource="cpu"}`,
			`fitgo_pressure_stalled_seconds_total{kind="full",resource="cpu"}`} {
			assert.Positive(t, s[name], name)
		}
		for _, r := range []string{"memory", "io"} {
			for _, k := range []string{"some", "full"} {
				assert.Contains(t, s, `fitgo_pressure_stalled_seconds_total{kind="`+k+`",resource="`+r+`"}`)
			}
		}
		for _, e := range []string{"low", "high", "max", "oom", "oom_kill", "oom_group_kill"} {
			assert.Contains(t, s, `fitgo_memory_events_total{event="`+e+`"}`)
		}
		assert.Zero(t, s["fitgo_read_errors_total"])
	})
}

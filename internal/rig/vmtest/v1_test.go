package vmtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
)

// TestCgroupV1 boots the guest once with pure cgroup v1 (cgroup2 is added at
// the end for the hybrid layout) and checks the scenarios of guest/v1.sh.
func TestCgroupV1(t *testing.T) {
	t.Parallel()
	c := boot(t, "v1")
	const (
		cpu = "/sys/fs/cgroup/cpu,cpuacct" // the mount point; cpu and cpuacct are links to it
		mem = "/sys/fs/cgroup/memory"
	)

	t.Run("kernel", func(t *testing.T) {
		// Without a cgroup2 mount the kernel shows no "0::" line.
		var f filesResult
		one(t, c, "v1/kernel", "files", &f)
		assert.NotEmpty(t, f.Files["/proc/sys/kernel/osrelease"], "guest kernel release")
		assert.Equal(t, "2:memory:/\n1:cpu,cpuacct:/\n", f.Files["/proc/self/cgroup"])
	})

	// 7.1: 1.5 CPUs (cpu.cfs_quota_us 150000, period 100000) and 512 MiB on the leaf.
	t.Run("7-leaf", func(t *testing.T) {
		var r report.Read
		one(t, c, "v1/leaf", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V1, dir: mem + "/leaf", cpuDir: cpu + "/leaf",
			cores: 1.5, cpuSource: cpu + "/leaf",
			max: 512 * mib, maxSource: mem + "/leaf",
		})

		var b report.Blank
		one(t, c, "v1/leaf", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 2, before: guestCPUs, cores: 1.5, cpuSource: cpu + "/leaf",
			mem: 512 * mib, memFrom: "memory.limit_in_bytes", memSource: mem + "/leaf",
		})

		var ceil report.Ceil
		one(t, c, "v1/leaf", "ceil", &ceil)
		assert.Empty(t, ceil.MaxProcs.Err)
		assert.Equal(t, 2, ceil.MaxProcs.After)
		assert.Equal(t, 2, ceil.Runtime.GOMAXPROCS)

		var rt runtimeResult
		one(t, c, "v1/leaf", "runtime", &rt)
		assert.Equal(t, 2, rt.GOMAXPROCS, "the runtime: ceil(1.5)")
	})

	// 7.2: 1 CPU and 256 MiB on the parents only.
	t.Run("7-parent", func(t *testing.T) {
		var f filesResult
		one(t, c, "v1/parent", "files", &f)
		assert.Equal(t, "-1\n", f.Files["/sys/fs/cgroup/cpu/parent/leaf/cpu.cfs_quota_us"])
		// Unlimited: the largest page-aligned int64.
		assert.Equal(t, "9223372036854771712\n", f.Files["/sys/fs/cgroup/memory/parent/leaf/memory.limit_in_bytes"])

		var r report.Read
		one(t, c, "v1/parent", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V1, dir: mem + "/parent/leaf", cpuDir: cpu + "/parent/leaf",
			cores: 1, cpuSource: cpu + "/parent",
			max: 256 * mib, maxSource: mem + "/parent",
		})

		var b report.Blank
		one(t, c, "v1/parent", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 1, before: guestCPUs, cores: 1, cpuSource: cpu + "/parent",
			mem: 256 * mib, memFrom: "memory.limit_in_bytes", memSource: mem + "/parent",
		})

		var rt runtimeResult
		one(t, c, "v1/parent", "runtime", &rt)
		assert.Equal(t, guestCPUs, rt.GOMAXPROCS, "the runtime reads the leaf only")
	})

	// Throttling on v1: cpu.stat's throttled_time is in ns, and the usage
	// comes from cpuacct.usage (cpu and cpuacct are mounted together).
	t.Run("throttle", func(t *testing.T) {
		var b report.Burn
		one(t, c, "v1/throttle", "burn", &b)
		checkLimits(t, b.Limits, wantLimits{
			version: cgroup.V1, dir: mem, cpuDir: cpu + "/throttle",
			cores: 0.5, cpuSource: cpu + "/throttle",
		})
		assert.Contains(t, b.RawAfter, "cpuacct.usage")
		checkThrottle(t, b, 0.5, "throttled_time", time.Nanosecond)
	})

	// Hybrid: cgroup2 at /sys/fs/cgroup/unified, with the process in its own
	// v2 cgroup; the controllers stay on v1.
	t.Run("hybrid-leaf", func(t *testing.T) {
		var f filesResult
		one(t, c, "hybrid/leaf", "files", &f)
		assert.Equal(t, "2:memory:/leaf\n1:cpu,cpuacct:/leaf\n0::/leaf\n", f.Files["/proc/self/cgroup"])
		assert.NotContains(t, f.Files["/sys/fs/cgroup/unified/cgroup.controllers"], "cpu ")

		var r report.Read
		one(t, c, "hybrid/leaf", "read", &r)
		checkLimits(t, r.Limits, wantLimits{
			version: cgroup.V1, dir: mem + "/leaf", cpuDir: cpu + "/leaf",
			cores: 1.5, cpuSource: cpu + "/leaf",
			max: 512 * mib, maxSource: mem + "/leaf",
		})

		var b report.Blank
		one(t, c, "hybrid/leaf", "report", &b)
		checkBlank(t, b, wantBlank{
			procs: 2, before: guestCPUs, cores: 1.5, cpuSource: cpu + "/leaf",
			mem: 512 * mib, memFrom: "memory.limit_in_bytes", memSource: mem + "/leaf",
		})
	})
}

package local

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

func TestV1Group(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	assert.Equal(t, cgroup.V1, h.Version)
	assert.Equal(t, "/sys/fs/cgroup/cpu", h.CPUParent)
	assert.Equal(t, "/sys/fs/cgroup/memory/user", h.MemoryParent, "run cgroups nest in the runner's own memory cgroup")
	assert.Equal(t, "v1 (cpu: /sys/fs/cgroup/cpu, memory: /sys/fs/cgroup/memory/user)", h.Describe())
	assert.False(t, k.exists(fmt.Sprintf("/sys/fs/cgroup/cpu/%s%d-probe", NamePrefix, os.Getpid())), "the probe is removed")

	g, err := h.NewGroup("fitgo-bench-1-1-x", Spec{CPUs: 0.5, Memory: 256 << 20})
	require.NoError(t, err)
	assert.Equal(t, "50000", k.get("/sys/fs/cgroup/cpu/fitgo-bench-1-1-x/cpu.cfs_quota_us"))
	assert.Equal(t, "100000", k.get("/sys/fs/cgroup/cpu/fitgo-bench-1-1-x/cpu.cfs_period_us"))
	assert.Equal(t, "268435456", k.get("/sys/fs/cgroup/memory/user/fitgo-bench-1-1-x/memory.limit_in_bytes"))
	assert.Equal(t, "268435456", k.get("/sys/fs/cgroup/memory/user/fitgo-bench-1-1-x/memory.memsw.limit_in_bytes"))
	assert.Equal(t, []string{
		"/sys/fs/cgroup/cpu/fitgo-bench-1-1-x/cgroup.procs",
		"/sys/fs/cgroup/memory/user/fitgo-bench-1-1-x/cgroup.procs",
	}, g.Procs)

	// cpu.stat and the OOM counter are read where the limits are.
	k.put("/sys/fs/cgroup/cpu/fitgo-bench-1-1-x/cpu.stat", "nr_periods 50\nnr_throttled 20\nthrottled_time 1500000000\n")
	st, err := g.Stats()
	require.NoError(t, err)
	assert.Equal(t, uint64(50), st.CPU.Periods)
	assert.Equal(t, uint64(20), st.CPU.ThrottledPeriods)
	assert.Equal(t, 1500*time.Millisecond, st.CPU.ThrottledTime)
	assert.Equal(t, 0.4, toResults(st, cgroup.Stats{}).ThrottledRatio())
	k.put("/sys/fs/cgroup/memory/user/fitgo-bench-1-1-x/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	n, err := g.OOMKills()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n)

	require.NoError(t, g.Remove())
	require.NoError(t, g.Remove(), "Remove is idempotent")
	assert.False(t, k.exists("/sys/fs/cgroup/cpu/fitgo-bench-1-1-x"))
	assert.False(t, k.exists("/sys/fs/cgroup/memory/user/fitgo-bench-1-1-x"))
	require.NoError(t, h.Close())
}

func TestV1Nested(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	g, err := h.NewGroup("fitgo-bench-1-2-x", Spec{CPUs: 1, Period: 50 * time.Millisecond, Nested: true})
	require.NoError(t, err)
	assert.Equal(t, "50000", k.get("/sys/fs/cgroup/cpu/fitgo-bench-1-2-x/cpu.cfs_quota_us"))
	assert.Equal(t, "50000", k.get("/sys/fs/cgroup/cpu/fitgo-bench-1-2-x/cpu.cfs_period_us"))
	assert.Equal(t, "-1\n", k.get("/sys/fs/cgroup/cpu/fitgo-bench-1-2-x/workload/cpu.cfs_quota_us"), "the child has no quota")
	assert.Equal(t, "9223372036854771712\n", k.get("/sys/fs/cgroup/memory/user/fitgo-bench-1-2-x/memory.limit_in_bytes"), "no memory limit asked")
	assert.Equal(t, "/sys/fs/cgroup/cpu/fitgo-bench-1-2-x", g.CPUDir)
	assert.Equal(t, []string{
		"/sys/fs/cgroup/cpu/fitgo-bench-1-2-x/workload/cgroup.procs",
		"/sys/fs/cgroup/memory/user/fitgo-bench-1-2-x/workload/cgroup.procs",
	}, g.Procs)
	require.NoError(t, g.Remove())
	assert.False(t, k.exists("/sys/fs/cgroup/cpu/fitgo-bench-1-2-x"))
}

func TestNewGroupCleansUpOnError(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	h.fs.onWrite = func(p, v string) (bool, error) {
		if strings.HasSuffix(p, "memory.limit_in_bytes") {
			return true, errors.New("no")
		}
		return false, nil
	}
	_, err = h.NewGroup("fitgo-bench-1-3-x", Spec{CPUs: 1, Memory: 64 << 20})
	require.Error(t, err)
	assert.False(t, k.exists("/sys/fs/cgroup/cpu/fitgo-bench-1-3-x"))
	assert.False(t, k.exists("/sys/fs/cgroup/memory/user/fitgo-bench-1-3-x"))
}

func TestV1NoRights(t *testing.T) {
	k := newFakeV1(t)
	k.denied = []string{"/sys/fs/cgroup/cpu"}
	_, err := open(k.sysfs(), "")
	var ae *AccessError
	require.ErrorAs(t, err, &ae)
	assert.ErrorIs(t, err, os.ErrPermission)
	assert.Contains(t, err.Error(), "/sys/fs/cgroup/cpu")
	assert.Contains(t, ae.Help(), "root")
	assert.Contains(t, ae.Help(), "-in-place")
	assert.NotContains(t, ae.Help(), "Delegate=yes", "v1 has no delegation to suggest")

	_, err = open(k.sysfs(), "/somewhere")
	require.ErrorContains(t, err, "-cgroup-parent is for cgroup v2")
}

func TestV2Root(t *testing.T) {
	k := newFakeV2(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	assert.Equal(t, cgroup.V2, h.Version)
	assert.Equal(t, "/sys/fs/cgroup", h.CPUParent)
	assert.Equal(t, "memory cpu", k.get("/sys/fs/cgroup/cgroup.subtree_control"), "cpu enabled for children")

	g, err := h.NewGroup("fitgo-bench-1-1-x", Spec{CPUs: 1.5, Memory: 128 << 20})
	require.NoError(t, err)
	assert.Equal(t, "150000 100000", k.get("/sys/fs/cgroup/fitgo-bench-1-1-x/cpu.max"))
	assert.Equal(t, "134217728", k.get("/sys/fs/cgroup/fitgo-bench-1-1-x/memory.max"))
	assert.Equal(t, "0", k.get("/sys/fs/cgroup/fitgo-bench-1-1-x/memory.swap.max"))
	assert.Equal(t, []string{"/sys/fs/cgroup/fitgo-bench-1-1-x/cgroup.procs"}, g.Procs)
	k.put("/sys/fs/cgroup/fitgo-bench-1-1-x/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
	n, err := g.OOMKills()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n)
	require.NoError(t, g.Remove())

	nested, err := h.NewGroup("fitgo-bench-1-2-x", Spec{CPUs: 1, Nested: true})
	require.NoError(t, err)
	assert.Equal(t, "100000 100000", k.get("/sys/fs/cgroup/fitgo-bench-1-2-x/cpu.max"))
	assert.Equal(t, "cpu memory", k.get("/sys/fs/cgroup/fitgo-bench-1-2-x/cgroup.subtree_control"))
	assert.Equal(t, "max 100000\n", k.get("/sys/fs/cgroup/fitgo-bench-1-2-x/workload/cpu.max"))
	assert.Equal(t, []string{"/sys/fs/cgroup/fitgo-bench-1-2-x/workload/cgroup.procs"}, nested.Procs)
	require.NoError(t, nested.Remove())

	require.NoError(t, h.Close())
	assert.Equal(t, "memory", k.get("/sys/fs/cgroup/cgroup.subtree_control"), "Close disables what the runner enabled")
}

func TestV2Delegated(t *testing.T) {
	k := newFakeV2(t)
	k.denied = []string{"/sys/fs/cgroup"} // not root: only the own scope is writable
	scope := "/sys/fs/cgroup/user.slice/app.scope"
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	assert.Equal(t, scope, h.CPUParent)
	leaf := path.Join(scope, fmt.Sprintf("%s%d-runner", NamePrefix, os.Getpid()))
	assert.Equal(t, []string{"100", "200"}, k.procs(leaf), "the scope's processes moved to a leaf")
	assert.Empty(t, k.procs(scope))
	assert.Equal(t, "cpu memory", k.get(path.Join(scope, "cgroup.subtree_control")))

	g, err := h.NewGroup("fitgo-bench-1-1-x", Spec{CPUs: 0.5})
	require.NoError(t, err)
	assert.Equal(t, "50000 100000", k.get(path.Join(scope, "fitgo-bench-1-1-x/cpu.max")))
	require.NoError(t, g.Remove())

	require.NoError(t, h.Close())
	assert.Equal(t, []string{"100", "200"}, k.procs(scope), "Close moves them back")
	assert.False(t, k.exists(leaf))
	assert.Equal(t, "", k.get(path.Join(scope, "cgroup.subtree_control")))
}

func TestV2ExplicitParentWithoutControllers(t *testing.T) {
	k := newFakeV2(t)
	k.put("/sys/fs/cgroup/user.slice/cgroup.controllers", "io")
	k.put("/sys/fs/cgroup/user.slice/cgroup.subtree_control", "io")
	_, err := open(k.sysfs(), "/sys/fs/cgroup/user.slice")
	var ae *AccessError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, err.Error(), "the cpu controller is not available in /sys/fs/cgroup/user.slice")
	assert.Contains(t, ae.Help(), "Delegate=yes")
}

func TestV2NoRights(t *testing.T) {
	k := newFakeV2(t)
	k.denied = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/app.scope"}
	_, err := open(k.sysfs(), "")
	var ae *AccessError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []string{"/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/app.scope"}, ae.Tried)
	assert.Equal(t, "memory", k.get("/sys/fs/cgroup/cgroup.subtree_control"), "a failed attempt is undone")
}

func TestRemoveStale(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	dead := "/sys/fs/cgroup/cpu/" + NamePrefix + "999999999-4-fitgo"
	mine := fmt.Sprintf("/sys/fs/cgroup/cpu/%s%d-4-fitgo", NamePrefix, os.Getpid())
	other := "/sys/fs/cgroup/cpu/somebody-else"
	for _, d := range []string{dead, dead + "/workload", mine, other} {
		require.NoError(t, k.sysfs().mkdir(d))
	}
	assert.Equal(t, []string{dead}, h.RemoveStale())
	assert.False(t, k.exists(dead))
	assert.True(t, k.exists(mine))
	assert.True(t, k.exists(other))
}

func TestParseOOMKill(t *testing.T) {
	n, err := parseCounter("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n", "oom_kill")
	require.NoError(t, err)
	assert.Equal(t, uint64(7), n)
	_, err = parseCounter("oom_kill_disable 0\nunder_oom 0\n", "oom_kill")
	require.Error(t, err)
	_, err = parseCounter("oom_kill x\n", "oom_kill")
	require.Error(t, err)
}

// TestOOMKillsWithoutCounter: a kernel without the oom_kill counter is an
// error, not 0 kills.
func TestOOMKillsWithoutCounter(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	g, err := h.NewGroup("fitgo-bench-1-9-x", Spec{Memory: 128 << 20})
	require.NoError(t, err)
	defer g.Remove()
	k.put("/sys/fs/cgroup/memory/user/fitgo-bench-1-9-x/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n")
	_, err = g.OOMKills()
	require.ErrorContains(t, err, "no oom_kill counter")
}

func TestQuotaMicros(t *testing.T) {
	assert.Equal(t, int64(50000), quotaMicros(0.5, 100*time.Millisecond))
	assert.Equal(t, int64(150000), quotaMicros(1.5, 100*time.Millisecond))
	assert.Equal(t, int64(1000), quotaMicros(0.001, 100*time.Millisecond), "kernel minimum")
}

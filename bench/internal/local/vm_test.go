package local

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/internal/rig/vmtest"
)

// vmScript is the guest's suite (/scenarios/bench.sh, sourced by the vm
// rig's /init): a short local benchmark on a pure cgroup v2 host, run as root
// in the root cgroup, then what it left behind.
const vmScript = `# shellcheck shell=sh
cg=/sys/fs/cgroup
mount -t cgroup2 cgroup2 "$cg" || fail "mount cgroup2"
echo "BENCH-SUBTREE-BEFORE $(cat "$cg/cgroup.subtree_control")"
step bench/run
cd /tmp || fail "cd /tmp"
bench local -bin-dir /bin -scenario cpu,nested,memory -cpus 1 -memory 128Mi -heap-mib 88 -runs 1 -duration 2s -variants untuned,fitgo -out /tmp/out
echo "BENCH-EXIT $?"
printf 'BENCH-RESULTS '
tr -d '\n' </tmp/out/results.json
echo
step bench/shared
bench local -bin-dir /bin -scenario shared -memory 128Mi -sidecar 48Mi -runs 1 -duration 1s -variants untuned,oracle-headroom -out /tmp/shared
echo "BENCH-SHARED-EXIT $?"
printf 'BENCH-SHARED-RUNS '
tr -d '\n' </tmp/shared/runs.json
echo
for d in "$cg"/fitgo-bench-*; do
	[ -e "$d" ] && echo "BENCH-LEFTOVER $d"
done
echo "BENCH-SUBTREE-AFTER $(cat "$cg/cgroup.subtree_control")"
`

// TestVMCgroupV2 runs the local runner in a qemu guest with cgroup v2 only
// (this machine and CI have v1), using the vm rig of internal/rig/vmtest and its
// switches (vmtest.Require). The memory scenario's live heap is 88 MiB of
// the 128 MiB, not the default 0.6 × 128 MiB (77 MiB): in CI at a load of
// 12 the emulated untuned workload allocated 44 MiB in its window, short of
// the 54 MiB its first GC trigger needed over 77 MiB, and was not killed;
// over 88 MiB about 30 MiB reach the limit. At 96 MiB fitgo's GOMEMLIMIT of
// 115 MiB left too little for the rest, and it was killed too.
func TestVMCgroupV2(t *testing.T) {
	host := vmtest.Require(t)
	mod, err := findModule("")
	require.NoError(t, err)

	bin := t.TempDir()
	require.NoError(t, vmtest.BuildStatic(mod, filepath.Join(bin, "bench"), "."))
	require.NoError(t, vmtest.BuildStatic(mod, bin+string(os.PathSeparator), "./cmd/untuned", "./cmd/fitgo", "./cmd/runtime", "./cmd/sidecar"))
	const cpus = 4
	console := vmtest.RunSuite(t, host, "bench", vmScript, map[string]string{
		"bench":   filepath.Join(bin, "bench"),
		"untuned": filepath.Join(bin, "untuned"),
		"fitgo":   filepath.Join(bin, "fitgo"),
		"runtime": filepath.Join(bin, "runtime"),
		"sidecar": filepath.Join(bin, "sidecar"),
	}, cpus, 1024)

	lines := map[string]string{}
	for _, l := range strings.Split(console, "\n") {
		l = strings.TrimRight(l, "\r")
		if k, v, ok := strings.Cut(l, " "); ok && strings.HasPrefix(k, "BENCH-") {
			lines[k] += v
		}
	}
	require.Equal(t, "0", lines["BENCH-EXIT"], console)
	assert.Empty(t, lines["BENCH-LEFTOVER"], "run cgroups left behind")
	assert.Equal(t, lines["BENCH-SUBTREE-BEFORE"], lines["BENCH-SUBTREE-AFTER"], "the root's subtree_control is restored")
	var sums []results.Summary
	require.NoError(t, json.Unmarshal([]byte(lines["BENCH-RESULTS"]), &sums), console)
	by := map[string]results.Summary{}
	for _, s := range sums {
		by[s.Scenario+"/"+s.Variant] = s
	}
	require.Len(t, by, 6, console)
	assert.Equal(t, results.Float(cpus), by["cpu/untuned"].GOMAXPROCS)
	assert.Equal(t, results.Float(1), by["cpu/fitgo"].GOMAXPROCS)
	assert.Equal(t, results.Float(cpus), by["nested/untuned"].GOMAXPROCS)
	assert.Equal(t, results.Float(1), by["nested/fitgo"].GOMAXPROCS, "fitgo sees the parent's cpu.max")
	for _, k := range []string{"cpu/untuned", "cpu/fitgo", "nested/untuned", "nested/fitgo"} {
		r := float64(by[k].ThrottledPeriodsRatio)
		assert.True(t, r >= 0 && r <= 1, "%s: throttled ratio %v from the v2 cpu.stat", k, r)
		p := float64(by[k].CPUPressure)
		assert.True(t, p >= 0 && p <= 1, "%s: CPU pressure %v from the v2 cpu.pressure", k, p)
	}
	assert.Positive(t, float64(by["cpu/untuned"].CPUPressure), "4 Ps under 1 CPU wait for it")
	assert.Equal(t, uint64(1), by["memory/untuned"].OOMKills, "memory.events oom_kill: %s", console)
	assert.Zero(t, by["memory/fitgo"].OOMKills)
	assert.InDelta(t, 0.9*128*(1<<20), float64(by["memory/fitgo"].GOMEMLIMITBytes), 1, "90% of memory.max")

	// The shared scenario on v2: memory.current of the limited cgroup counts
	// the sidecar in both layouts, and memory.events counts the workload's
	// kill there, also from its child in the sibling layout (v1 does not).
	require.Equal(t, "0", lines["BENCH-SHARED-EXIT"], console)
	var runs []results.Run
	require.NoError(t, json.Unmarshal([]byte(lines["BENCH-SHARED-RUNS"]), &runs), console)
	require.Len(t, runs, 4)
	for _, r := range runs {
		t.Run(r.Layout+"-"+r.Variant, func(t *testing.T) { checkSharedRun(t, r, 128<<20, 48<<20) })
	}
	if t.Failed() {
		t.Logf("console:\n%s", console)
	}
}

// checkSharedRun checks a run of the shared scenario under a limit of limit
// bytes with a sidecar holding sidecar bytes: the untuned workload is
// OOM-killed, the oracle is not.
func checkSharedRun(t *testing.T, r results.Run, limit, sidecar int64) {
	require.NotNil(t, r.Sidecar)
	assert.GreaterOrEqual(t, r.Sidecar.LimitedUsageBytes, sidecar)
	require.Contains(t, r.MemoryEvents, "max")
	switch r.Variant {
	case "untuned":
		if why, ok := noGCInWindow(r, limit); ok {
			t.Skip(why)
		}
		assert.Equal(t, uint64(1), r.OOMKills)
		assert.Equal(t, uint64(1), r.MemoryEvents["oom_kill"])
		assert.Positive(t, r.MemoryEvents["max"], "the limit was hit")
	case "oracle-headroom":
		assert.Zero(t, r.OOMKills)
		assert.NotNil(t, r.Workload)
	}
}

// noGCInWindow reports why an untuned run under a limit of limit bytes was
// not OOM-killed when it completed no GC cycle in its window: the kill needs
// the heap to grow to the GOGC trigger, past the limit (less what the sidecar
// holds), which takes allocation that a starved process may not do within
// its window; such a run proves nothing either way.
func noGCInWindow(r results.Run, limit int64) (string, bool) {
	if r.OOMKills > 0 || r.Workload == nil || r.Workload.GCCycles > 0 {
		return "", false
	}
	return fmt.Sprintf("%s: no GC cycle in the workload's window (load %.1f; peak RSS %d under a limit of %d): its heap never grew to the GOGC trigger",
		strings.Join([]string{r.Scenario, r.Layout, r.Variant}, "/"), r.HostLoad, r.Workload.PeakRSSBytes, limit), true
}

// TestSharedRunWithoutGC: an untuned run that was not killed because its
// heap never grew to the GOGC trigger (a busy host slowed it down; the
// figures of a run at load 25) is skipped with the figures, not failed.
func TestSharedRunWithoutGC(t *testing.T) {
	r := results.Run{Scenario: "shared", Layout: "coprocess", Variant: "untuned", Sidecar: &results.Sidecar{LimitedUsageBytes: 56410112},
		MemoryEvents: map[string]uint64{"max": 0}, Workload: &results.Workload{PeakRSSBytes: 78835712, GCCycles: 0}, HostLoad: 25}
	var skipped bool
	t.Run("check", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		checkSharedRun(t, r, 128<<20, 48<<20)
	})
	assert.True(t, skipped)
}

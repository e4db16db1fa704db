package local

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/internal/vmtest"
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
bench local -bin-dir /bin -scenario cpu,nested,memory -cpus 1 -memory 128Mi -runs 1 -duration 2s -variants untuned,fitgo -out /tmp/out
echo "BENCH-EXIT $?"
printf 'BENCH-RESULTS '
tr -d '\n' </tmp/out/results.json
echo
for d in "$cg"/fitgo-bench-*; do
	[ -e "$d" ] && echo "BENCH-LEFTOVER $d"
done
echo "BENCH-SUBTREE-AFTER $(cat "$cg/cgroup.subtree_control")"
`

// TestVMCgroupV2 runs the local runner in a qemu guest with cgroup v2 only
// (this machine and CI have v1), using the vm rig of internal/vmtest. It
// follows the rig's switches: FITGO_VMTEST=skip skips it, -short skips it
// unless FITGO_VMTEST=require, and missing pieces (qemu, busybox, the
// kernel) skip it, or fail it under FITGO_VMTEST=require.
func TestVMCgroupV2(t *testing.T) {
	mode := os.Getenv("FITGO_VMTEST")
	switch {
	case mode == "skip":
		t.Skip("FITGO_VMTEST=skip")
	case testing.Short() && mode != "require":
		t.Skip("boots qemu; skipped with -short (FITGO_VMTEST=require runs it anyway)")
	}
	mod, err := findModule("")
	require.NoError(t, err)
	host, missing := vmtest.LookupHost(vmtest.CacheDir())
	if len(missing) > 0 {
		msg := "the vm test needs:\n\t" + strings.Join(missing, "\n\t")
		if mode == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	bin := t.TempDir()
	build := func(out string, pkgs ...string) {
		cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, pkgs...)...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
	build(filepath.Join(bin, "bench"), ".")
	build(bin+string(os.PathSeparator), "./cmd/untuned", "./cmd/fitgo")
	r, err := vmtest.NewInitramfs(host.Busybox, map[string]string{
		"bench":   filepath.Join(bin, "bench"),
		"untuned": filepath.Join(bin, "untuned"),
		"fitgo":   filepath.Join(bin, "fitgo"),
	})
	require.NoError(t, err)
	r.AddFile("scenarios/bench.sh", 0o644, []byte(vmScript))
	initramfs := filepath.Join(bin, "initramfs.cpio")
	f, err := os.Create(initramfs)
	require.NoError(t, err)
	_, err = r.WriteTo(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	const cpus = 4
	m := vmtest.Machine{
		QEMU: host.QEMU, Kernel: host.Kernel, Initramfs: initramfs,
		CPUs: cpus, MemoryMiB: 1024, Cmdline: []string{"fitgo.suite=bench"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	err = m.Run(ctx, &out)
	t.Logf("qemu ran %v", time.Since(start).Round(time.Second))
	console := out.String()
	require.NoError(t, err, console)
	c, err := vmtest.ParseConsole(out.Bytes())
	require.NoError(t, err, console)
	require.True(t, c.Done, "the guest did not finish:\n%s", console)
	require.Empty(t, c.Errors, console)

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
	if t.Failed() {
		t.Logf("console:\n%s", console)
	}
}

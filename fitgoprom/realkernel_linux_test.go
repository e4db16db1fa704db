//go:build linux

package fitgoprom

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/vmtest/probe/report"
)

// TestRealKernelV1 runs internal/promprobe, built with go build, in cgroups
// of its own in the host's v1 cpu and memory hierarchies, limited to half a
// CPU and 256 MiB: two goroutines spin for 1.5 s, then a pedantic registry
// gathers the collector. (cgroup v2 is tested in the qemu rig:
// internal/vmtest.)
func TestRealKernelV1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating cgroups needs root")
	}
	self, err := cgroup.Read()
	if err != nil {
		t.Skipf("skipped: no cgroup information here: %v", err)
	}
	if self.CPU.Version != cgroup.V1 || self.Memory.Version != cgroup.V1 {
		t.Skipf("skipped: needs v1 cpu and memory hierarchies; this system has cpu %v, memory %v", self.CPU.Version, self.Memory.Version)
	}
	bin := filepath.Join(t.TempDir(), "promprobe")
	build := exec.Command("go", "build", "-o", bin, "./internal/promprobe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	name := fmt.Sprintf("fitgoprom-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cpuDir, memDir := filepath.Join(self.CPU.Mount, name), filepath.Join(self.Memory.Mount, name)
	for _, dir := range []string{cpuDir, memDir} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission) {
				t.Skipf("skipped: no writable v1 hierarchy: %v", err)
			}
			require.NoError(t, err)
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
	}
	write := func(name, data string) { require.NoError(t, os.WriteFile(name, []byte(data), 0o644)) }
	write(filepath.Join(cpuDir, "cpu.cfs_period_us"), "100000")
	write(filepath.Join(cpuDir, "cpu.cfs_quota_us"), "50000")
	write(filepath.Join(memDir, "memory.limit_in_bytes"), "268435456")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The shell joins the cgroups, then becomes the probe.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `for d in "$1" "$2"; do echo $$ >"$d/cgroup.procs" || exit 125; done; shift 2; exec "$@"`,
		"sh", cpuDir, memDir, bin, "-scenario", "v1/host", "-threads", "2", "-for", "1.5s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "promprobe: %s", stderr.String())

	var r report.Prom
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "FITGO-RESULT "); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &r))
		}
	}
	require.NotNil(t, r.Samples, "no result in %q", out)
	t.Logf("after %v: %v", r.Wall, r.Samples)
	require.Empty(t, r.GatherErr)
	s := r.Samples
	assert.Equal(t, 0.5, s["fitgo_cpu_limit_cores"])
	assert.Equal(t, 268435456.0, s["fitgo_memory_limit_bytes"])
	assert.Positive(t, s["fitgo_cpu_cfs_periods_total"])
	assert.Positive(t, s["fitgo_cpu_cfs_throttled_periods_total"])
	assert.Positive(t, s["fitgo_cpu_cfs_throttled_seconds_total"])
	assert.LessOrEqual(t, s["fitgo_cpu_cfs_throttled_periods_total"], s["fitgo_cpu_cfs_periods_total"])
	assert.Positive(t, s["fitgo_memory_usage_bytes"])
	assert.Contains(t, s, `fitgo_memory_events_total{event="oom_kill"}`)
	assert.Zero(t, s["fitgo_read_errors_total"])
	info := fmt.Sprintf(`fitgo_cgroup_info{cpu_dir=%q,cpu_source=%q,cpu_version="v1",gomaxprocs_policy="",gomemlimit_policy="",memory_dir=%q,memory_high_source="",memory_source=%q,memory_version="v1"}`,
		cpuDir, cpuDir, memDir, memDir)
	assert.Equal(t, 1.0, s[info], "the info metric names the cgroups: %s", info)
}

// removeCgroup removes a cgroup directory (rmdir, as cgroupfs wants), trying
// again for a while if it is still busy with an exiting process.
func removeCgroup(t *testing.T, dir string) {
	var err error
	for i := 0; i < 50; i++ {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("could not remove cgroup %s: %v", dir, err)
}

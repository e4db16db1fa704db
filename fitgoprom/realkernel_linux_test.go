//go:build linux

package fitgoprom

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
)

// TestRealKernelV1 runs internal/promprobe, built with go build, in cgroups
// of its own in the host's v1 cpu and memory hierarchies, limited to half a
// CPU and 256 MiB: two goroutines spin for 1.5 s, then a pedantic registry
// gathers the collector. (cgroup v2 is tested in the qemu rig:
// internal/rig/vmtest.)
func TestRealKernelV1(t *testing.T) {
	cgv1.Require(t)
	bin := filepath.Join(t.TempDir(), "promprobe")
	build := exec.Command("go", "build", "-o", bin, "./internal/promprobe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The probe runs in the pair's children, which carry the limits.
	p := cgv1.NewPair(t)
	cpuDir, memDir := p.CPUChild, p.MemChild
	cgv1.SetCPU(t, cpuDir, 50000)
	cgv1.SetMemory(t, memDir, 268435456)

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

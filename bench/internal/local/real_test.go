package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/cgroup"
)

// realHost opens the real cgroup hierarchy, or skips the test with the
// reason: also under -short, the contributor's loop.
func realHost(t *testing.T) *Host {
	t.Helper()
	if testing.Short() {
		t.Skip("runs in real cgroups; skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("real cgroups need Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	h, err := Open("/", "")
	if err != nil {
		t.Skipf("no writable cgroup hierarchy: %v", err)
	}
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	return h
}

func testName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	return fmt.Sprintf("%s%d-%s-%d", NamePrefix, os.Getpid(), name, time.Now().UnixNano()%1e6)
}

// trampoline returns a command that joins g's cgroups, then executes argv.
func trampoline(t *testing.T, g *Group, argv ...string) *exec.Cmd {
	self, err := os.Executable()
	require.NoError(t, err)
	procs, err := json.Marshal(g.Procs)
	require.NoError(t, err)
	cmd := exec.Command(self, argv...)
	cmd.Env = append(os.Environ(), cgexecEnv+"="+string(procs))
	return cmd
}

func TestRealGroup(t *testing.T) {
	h := realHost(t)
	for _, nested := range []bool{false, true} {
		t.Run(fmt.Sprint("nested=", nested), func(t *testing.T) {
			name := testName(t)
			g, err := h.NewGroup(name, Spec{CPUs: 0.5, Memory: 64 << 20, Nested: nested})
			require.NoError(t, err)
			t.Cleanup(func() { g.Remove() })

			// The process is in the run's cgroups from its first instruction.
			out, err := trampoline(t, g, "/bin/cat", "/proc/self/cgroup").Output()
			require.NoError(t, err)
			want := "/" + name
			if nested {
				want += "/workload"
			}
			if h.Version == 1 {
				assert.Regexp(t, `(?m)^\d+:cpu:\S*`+want+`$`, string(out))
				assert.Regexp(t, `(?m)^\d+:memory:\S*`+want+`$`, string(out))
				q, err := os.ReadFile(filepath.Join(g.CPUDir, "cpu.cfs_quota_us"))
				require.NoError(t, err)
				assert.Equal(t, "50000", strings.TrimSpace(string(q)))
			} else {
				assert.Regexp(t, `(?m)^0::\S*`+want+`$`, string(out))
			}
			_, err = g.Stats()
			require.NoError(t, err)
			n, err := g.OOMKills()
			require.NoError(t, err)
			assert.Zero(t, n)

			dirs := []string{g.CPUDir, g.MemoryDir}
			require.NoError(t, g.Remove())
			for _, d := range dirs {
				assert.NoDirExists(t, d)
			}
		})
	}
}

func TestRealOOMKill(t *testing.T) {
	h := realHost(t)
	g, err := h.NewGroup(testName(t), Spec{Memory: 48 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { g.Remove() })

	cmd := trampoline(t, g)
	cmd.Args = append(cmd.Args[:1], cmd.Args[0]) // exec the test binary itself, as a hog
	cmd.Env = append(cmd.Env, hogEnv+"=256")
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the hog should be killed, printed %q", out)
	ws := ee.Sys().(syscall.WaitStatus)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
	n, err := g.OOMKills()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n)
}

// TestRealNoRights runs the runner as nobody: it must say what it needs and
// exit 1.
func TestRealNoRights(t *testing.T) {
	realHost(t) // root, and cgroups are writable for root
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "fitgo-bench-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "local.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))

	cmd := exec.Command(bin, "-runs", "1", "-duration", "1s")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(os.Environ()), mainEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, stderr.String(), "cannot create limited cgroups under")
	assert.Contains(t, stderr.String(), "permission denied")
	assert.Contains(t, stderr.String(), "  - root: sudo")
	assert.Contains(t, stderr.String(), "-in-place")
}

// TestRealRun is a short real benchmark: untuned and fitgo in the cpu, nested
// and memory scenarios, checking that the report files are written and
// plausible.
func TestRealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the workload and runs it for ~20s")
	}
	realHost(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{
		"-scenario", "cpu,nested,memory", "-cpus", "1", "-memory", "256Mi", "-runs", "1", "-duration", "2s",
		"-variants", "untuned,fitgo", "-out", out,
	}, &stdout, io.MultiWriter(&stderr, testLog{t}))
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "cpu: CPU quota 1 CPU, no memory limit")
	assert.Contains(t, stdout.String(), "memory: no CPU quota, memory limit 256 MiB")
	assert.Contains(t, stderr.String(), "[1/6]")
	assert.Contains(t, stderr.String(), "ETA")

	var sums []results.Summary
	b, err := os.ReadFile(filepath.Join(out, report.ResultsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sums))
	require.Len(t, sums, 6)
	byKey := map[string]results.Summary{}
	for _, s := range sums {
		byKey[s.Scenario+"/"+s.Variant] = s
		assert.Equal(t, 1, s.Runs)
	}
	u := byKey["cpu/untuned"]
	assert.Equal(t, results.Float(runtime.NumCPU()), u.GOMAXPROCS, "untuned ignores the quota")
	assert.Greater(t, float64(u.LatencyP99MS), 0.0)
	assert.GreaterOrEqual(t, float64(u.LatencyP999MS), float64(u.LatencyP99MS))
	assert.Greater(t, float64(u.Requests), 1000.0)
	tr := float64(u.ThrottledPeriodsRatio)
	assert.True(t, tr >= 0 && tr <= 1, "throttled ratio %v", tr)
	assert.Zero(t, u.OOMKills)

	m := byKey["memory/untuned"]
	runs := readRuns(t, out)
	i := slices.IndexFunc(runs, func(r results.Run) bool { return r.Scenario == "memory" && r.Variant == "untuned" })
	require.GreaterOrEqual(t, i, 0)
	if why, ok := noGCInWindow(runs[i], 256<<20); ok {
		t.Log("kill not checked: " + why)
	} else {
		assert.Equal(t, uint64(1), m.OOMKills, "a 154 MiB live heap without GOMEMLIMIT outgrows 256 MiB")
		assert.True(t, math.IsNaN(float64(m.LatencyP99MS)))
	}
	if runtime.NumCPU() >= 2 {
		// fitgo reads the quota, also on the parent cgroup only; untuned does not.
		assert.Equal(t, results.Float(1), byKey["cpu/fitgo"].GOMAXPROCS)
		assert.Equal(t, results.Float(1), byKey["nested/fitgo"].GOMAXPROCS)
		assert.Equal(t, results.Float(runtime.NumCPU()), byKey["nested/untuned"].GOMAXPROCS)
	}
	assert.False(t, math.IsNaN(float64(byKey["nested/fitgo"].ThrottledPeriodsRatio)), "cpu.stat of the parent with the quota")
	fm := byKey["memory/fitgo"]
	assert.Zero(t, fm.OOMKills, "fitgo's GOMEMLIMIT keeps the heap under the limit")
	assert.Less(t, float64(fm.GOMEMLIMITBytes), float64(256<<20))
	assert.Greater(t, float64(fm.Requests), 1000.0)

	md, err := os.ReadFile(filepath.Join(out, report.ReportFile))
	require.NoError(t, err)
	for _, want := range []string{"**Kernel**", "**Cgroups**: v", "**Go**: go1", "-variants untuned,fitgo", "Host load average"} {
		assert.Contains(t, string(md), want)
	}
	bt, err := os.ReadFile(filepath.Join(out, report.BenchFile))
	require.NoError(t, err)
	assert.Contains(t, string(bt), "BenchmarkLocal/scenario=cpu/cpus=1/mem=none/variant=untuned\t")
	assert.Contains(t, string(bt), "BenchmarkLocal/scenario=memory/cpus=0/mem=256Mi/variant=untuned\t")
	chart, err := os.Open(filepath.Join(out, report.ChartFile))
	require.NoError(t, err)
	defer chart.Close()
	_, err = png.Decode(chart)
	require.NoError(t, err)

	assertNoLeftovers(t)
}

// TestRealInterrupt cancels a run: the runner must stop the workload, remove
// its cgroups and exit 130.
func TestRealInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the workload")
	}
	realHost(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr bytes.Buffer
	w := &notifyWriter{w: &stderr, match: "calibrated", fn: func() { time.AfterFunc(1500*time.Millisecond, cancel) }}
	start := time.Now()
	code := Main(ctx, []string{"-cpus", "1", "-runs", "1", "-duration", "60s", "-variants", "untuned"}, io.Discard, w)
	assert.Equal(t, 130, code, stderr.String())
	assert.Less(t, time.Since(start), 50*time.Second)
	assertNoLeftovers(t)
}

type notifyWriter struct {
	w     io.Writer
	match string
	fn    func()
	done  bool
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	if !n.done && bytes.Contains(p, []byte(n.match)) {
		n.done = true
		n.fn()
	}
	return n.w.Write(p)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// readRuns reads the runs a runner wrote into out.
func readRuns(t *testing.T, out string) []results.Run {
	t.Helper()
	var runs []results.Run
	b, err := os.ReadFile(filepath.Join(out, report.RunsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &runs))
	return runs
}

func assertNoLeftovers(t *testing.T) {
	t.Helper()
	h, err := Open("/", "")
	require.NoError(t, err)
	defer h.Close()
	prefix := fmt.Sprintf("%s%d-", NamePrefix, os.Getpid())
	for _, parent := range uniq(h.CPUParent, h.MemoryParent) {
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				t.Errorf("left behind: %s", filepath.Join(parent, e.Name()))
			}
		}
	}
}

// TestInPlace runs the variants in the current cgroup: no rights needed.
func TestInPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the workload")
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"-in-place", "-runs", "1", "-duration", "500ms", "-variants", "env,fitgo", "-heap-mib", "16"},
		&stdout, io.MultiWriter(&stderr, testLog{t}))
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "in place: ")
	assert.Contains(t, stdout.String(), "in-place: ")
	for _, v := range []string{"env", "fitgo"} {
		assert.Regexp(t, `(?m)^`+v+`\s+\d+\s`, stdout.String(), "a row with GOMAXPROCS for %s", v)
	}
}

// TestRealShared is a short shared run in real cgroups, both layouts: the
// limited cgroup must account for the sidecar (hierarchically in the sibling
// layout), its memory events must be read, and a heap whose GOGC goal
// ignores the sidecar must be killed while the oracle's survives.
func TestRealShared(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the workload and runs it for ~10s")
	}
	h := realHost(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{
		"-scenario", "shared", "-memory", "128Mi", "-sidecar", "48Mi", "-runs", "1", "-duration", "1s",
		"-variants", "untuned,oracle-headroom", "-out", out,
	}, &stdout, io.MultiWriter(&stderr, testLog{t}))
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "shared: no CPU quota, memory limit 128 MiB on the parent, shared with a 48 MiB sidecar in a sibling\n  cgroup",
		"stdout's title, wrapped at 100 columns")
	md, err := os.ReadFile(filepath.Join(out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## shared: no CPU quota, memory limit 128 MiB on the parent, shared with a 48 MiB sidecar in a sibling cgroup")
	assert.Contains(t, string(md), " | memory events |", "the memory events, in report.md's appendix")

	runs := readRuns(t, out)
	require.Len(t, runs, 4)
	for _, r := range runs {
		name := r.Layout + "/" + r.Variant
		require.NotNil(t, r.Sidecar, name)
		assert.GreaterOrEqual(t, r.Sidecar.RSSBytes, int64(48<<20), name)
		assert.GreaterOrEqual(t, r.Sidecar.LimitedUsageBytes, int64(48<<20), "%s: the limited cgroup accounts for the sidecar", name)
		assert.False(t, r.Sidecar.OOMKilled, name)
		require.Contains(t, r.MemoryEvents, "oom_kill", name)
		if h.Version == cgroup.V1 {
			assert.Contains(t, r.MemoryEvents, "failcnt", name)
		} else {
			assert.Contains(t, r.MemoryEvents, "max", name)
		}
		if r.MemoryPeakBytes > 0 {
			// The kernel charges what it cannot refuse (an OOM victim's last
			// pages, kernel memory) past the limit: a killed run's peak may
			// pass it by a few pages (seen: one page).
			over := int64(0)
			if r.Killed() || r.Signal == "killed" {
				over = 1 << 20
			}
			assert.GreaterOrEqual(t, r.MemoryPeakBytes, int64(48<<20), name)
			assert.LessOrEqual(t, r.MemoryPeakBytes, int64(128<<20)+over, name)
		}
		switch r.Variant {
		case "untuned":
			// A 48 MiB live heap grows to twice that before GOGC collects:
			// more than the 80 MiB the sidecar leaves.
			if why, ok := noGCInWindow(r, 128<<20); ok {
				t.Log("kill not checked: " + why)
				continue
			}
			assert.Equal(t, uint64(1), r.OOMKills, name)
			assert.Nil(t, r.Workload, name)
			kills := r.MemoryEvents["oom_kill"]
			if r.Layout == LayoutSibling && h.Version == cgroup.V1 {
				assert.Zero(t, kills, "v1 counts the kill in the workload's own child only")
			} else {
				assert.Equal(t, uint64(1), kills, name)
			}
		case "oracle-headroom":
			assert.Zero(t, r.OOMKills, name)
			require.NotNil(t, r.Workload, name)
			assert.Equal(t, int64(0.9*80*(1<<20)), r.Workload.GOMEMLIMIT, "0.9 × (128 − 48) MiB")
			assert.Zero(t, r.MemoryEvents["oom_kill"], name)
		}
	}
	assertNoLeftovers(t)
}

// TestRealOOMProfile runs the variant with the OOM capture: the runner
// gives it a directory of its own, counts its captures into the run and
// removes the directory.
func TestRealOOMProfile(t *testing.T) {
	realHost(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the runner makes the capture's directory
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	// A live heap of 420 MiB under 512 MiB: GOMEMLIMIT 460.8 MiB, the memory
	// held past 90 % of the limit (496-498 MiB at the peak in the runs of
	// docs/observability.md), some 15 MiB short of it.
	code := Main(t.Context(), []string{"-scenario", "memory", "-memory", "512Mi", "-heap-mib", "420", "-runs", "1", "-duration", "2s",
		"-variants", "fitgo,fitgo-oomprofile", "-out", out}, &stdout, io.MultiWriter(&stderr, testLog{t}))
	require.Equal(t, 0, code, stderr.String())
	runs := readRuns(t, out)
	require.Len(t, runs, 2)
	for _, r := range runs {
		if r.Variant == "fitgo" {
			assert.Nil(t, r.OOMCaptures, "no capture without the option")
			continue
		}
		require.NotNil(t, r.OOMCaptures, "the captures counted")
		assert.Equal(t, 1, *r.OOMCaptures, "one capture past 90 %%: peak %d MiB of 512", r.MemoryPeakBytes>>20)
	}
	left, err := filepath.Glob(filepath.Join(tmp, "fitgo-oomprofile-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the capture's directory removed")
	assertNoLeftovers(t)
}

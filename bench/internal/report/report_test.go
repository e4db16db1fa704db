package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/maxprocs"
)

func run(variant string, cpus float64, round, maxprocs int, p99 results.Float, throttled float64) results.Run {
	return results.Run{
		Scenario: "cpu", Variant: variant, CPUs: cpus, Round: round,
		Workload: &results.Workload{
			Type: results.TypeResult, Variant: variant, GOMAXPROCS: maxprocs, GOMEMLIMIT: math.MaxInt64,
			Latency:  results.Percentiles{P50: 0.2, P99: p99, P999: p99 * 1.3, Max: p99 * 2},
			GCPause:  results.Percentiles{P50: 0.05, P99: 0.4, P999: 0.5, Max: 0.5},
			GCCycles: 4, GCCPUFraction: 0.12, Requests: 10000, DurationMS: 10000, PeakRSSBytes: 230 << 20,
			CPUStat: &results.CPUStat{Periods: 100, ThrottledPeriods: uint64(throttled * 100)},
		},
	}
}

func sampleRuns() []results.Run {
	var runs []results.Run
	for round := 1; round <= 3; round++ {
		d := float64(round)
		runs = append(runs,
			run("runtime", 1, round, 2, results.Float(55+d), 0.14),
			run("fitgo", 1, round, 1, results.Float(30+d), 0.02),
			run("runtime", 0.5, round, 2, results.Float(150+d), 0.35),
			run("fitgo", 0.5, round, 1, results.Float(80+d), 0.37),
		)
	}
	runs = append(runs, results.Run{
		Scenario: "memory", Variant: "untuned", MemoryBytes: 256 << 20, Round: 1,
		ExitCode: -1, Signal: "killed", OOMKills: 1,
	}, results.Run{
		Scenario: "memory", Variant: "fitgo", MemoryBytes: 256 << 20, Round: 1,
		Workload: &results.Workload{GOMAXPROCS: 2, GOMEMLIMIT: 230 << 20, Requests: 5000, DurationMS: 5000},
	})
	return runs
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	meta := HostMeta()
	meta.Runner = "local"
	meta.Command = "go run -C bench . local -cpus 0.5,1"
	meta.Cgroup = "v1"
	meta.Elapsed = 90 * time.Second
	runs := sampleRuns()
	files, err := Write(dir, meta, runs)
	require.NoError(t, err)
	for _, f := range []string{ResultsFile, RunsFile, ReportFile, ChartFile, SweepFile, BenchFile} {
		assert.Contains(t, files, filepath.Join(dir, f))
		assert.FileExists(t, filepath.Join(dir, f))
	}

	var sums []map[string]any
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sums))
	require.Len(t, sums, 6)
	assert.Equal(t, "runtime", sums[0]["variant"])
	assert.Equal(t, 57.0, sums[0]["latency_p99_ms"])
	assert.Equal(t, 3.0, sums[0]["runs"])

	var back []results.Run
	b, err = os.ReadFile(filepath.Join(dir, RunsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Len(t, back, len(runs))

	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	require.NoError(t, err)
	for _, want := range []string{
		"`go run -C bench . local -cpus 0.5,1`", "**Kernel**", "**Go**: go1", "**Cgroups**: v1",
		"## cpu: CPU quota 1 CPU, no memory limit",
		"| variant | GOMAXPROCS | p99 ms | p99 vs runtime | p99.9 ms | GC CPU | throttled periods |",
		"| runtime | 2 | 57.0 (56.0–58.0) | 1.00x | 74.1 (72.8–75.4) | 12.0% | 14.0% |",
		"| fitgo | 1 | 32.0 (31.0–33.0) | 0.56x | 41.6 (40.3–42.9) | 12.0% | 2.0% |",
		"## memory: no CPU quota, memory limit 256 MiB",
		"| untuned | – | – | – | – | 0 | 1/1 |",
		"## Appendix: the other columns",
	} {
		assert.Contains(t, string(md), want)
	}

	f, err := os.Open(filepath.Join(dir, ChartFile))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dy(), img.Bounds().Dx()/2, "three rows of charts")

	bt, err := os.ReadFile(filepath.Join(dir, BenchFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(bt)), "\n")
	require.Len(t, lines, 3+1+len(runs)) // goos, goarch, pkg, cpu
	assert.Equal(t, "BenchmarkLocal/scenario=cpu/cpus=1/mem=none/variant=runtime\t10000\t0.2 p50-ms\t56 p99-ms\t72.8 p99.9-ms\t112 max-ms\t0.4 gc-pause-p99-ms\t0.12 gc-cpu-fraction\t2 gomaxprocs\t0.14 throttled-ratio\t0 oom-kills",
		lines[4])
	assert.Equal(t, "BenchmarkLocal/scenario=memory/cpus=0/mem=256Mi/variant=untuned\t0\t1 oom-kills", lines[len(lines)-2])
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Table(&buf, results.Summarize(sampleRuns())))
	out := buf.String()
	assert.Contains(t, out, "cpu: CPU quota 0.5 CPU, no memory limit (medians of 3 runs per variant")
	assert.Contains(t, out, "memory: no CPU quota, memory limit 256 MiB (medians of 1 runs")
	// Columns are aligned: every row of a table has the "p99 ms" column at the same offset.
	var header string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "variant") {
			header = l
			continue
		}
		if strings.HasPrefix(l, "fitgo ") && header != "" {
			at := strings.Index(header, "p99 ms")
			require.Positive(t, at)
			assert.NotEqual(t, ' ', l[at], "a value starts under the header: %q", l)
		}
	}
}

func TestSettingTitle(t *testing.T) {
	assert.Equal(t, "nested: CPU quota 1 CPU on the parent cgroup only, no memory limit",
		SettingTitle(results.Setting{Scenario: "nested", CPUs: 1}))
	assert.Equal(t, "memory: no CPU quota, memory limit 256 MiB",
		SettingTitle(results.Setting{Scenario: "memory", MemoryBytes: 256 << 20}))
}

func sweepRuns() []results.Run {
	var runs []results.Run
	add := func(v string, load, cpus float64, p99s ...results.Float) {
		for i, p := range p99s {
			r := run(v, cpus, i+1, 1, p, 0.1)
			r.Scenario, r.Load = "sweep", load
			runs = append(runs, r)
		}
	}
	for _, load := range []float64{0.1, 0.7} {
		add("GOMAXPROCS=1", load, 0.5, 60, 61, 62)
		add("GOMAXPROCS=2", load, 0.5, 120, 125, 130)
		add("GOMAXPROCS=1", load, 1, 6, 7, 8)
		add("GOMAXPROCS=2", load, 1, 20, 21, 22)
		add("GOMAXPROCS=1", load, 1.5, 7, 7.2, 8)
		add("GOMAXPROCS=2", load, 1.5, 2.5, 2.8, 3)
		add("fitgo", load, 0.5, 60, 62, 64)
		add("fitgo", load, 1, 6, 8, 10)
		add("fitgo", load, 1.5, 7, 8, 9)
	}
	runs = append(runs, results.Run{Scenario: "sweep", Load: 0.7, CPUs: 1, Variant: "killed", OOMKills: 1, Round: 1})
	return runs
}

func TestSweepMarkdown(t *testing.T) {
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, Meta{Runner: "local", CPUs: 2}, results.Summarize(sweepRuns())))
	out := md.String()
	for _, want := range []string{
		"## Sweep: sweep, load 0.1 of the quota",
		"## Sweep: sweep, load 0.7 of the quota",
		"| variant | 0.5 CPU | 1 CPU | 1.5 CPU | worst regret |",
		"| GOMAXPROCS=1 | 61.0 (1.00x) | 7.00 (1.00x) | 7.20 (2.57x) | 2.57x |",
		"| fitgo | 62.0 (1.02x) | 8.00 (1.14x) | 8.00 (2.86x) | 2.86x |",
		"| killed | – | OOM-killed | – | – |",
		// On 2 CPUs: floor 1, 1, 1; ceil 1, 1, 2; nearest 1, 1, 2; the runtime 2, 2, 2.
		"| floor | 1 (1.00x) | 1 (1.00x) | 1 (2.57x) | 2.57x |",
		"| ceil | 1 (1.00x) | 1 (1.00x) | 2 (1.00x) | 1.00x |",
		"| nearest | 1 (1.00x) | 1 (1.00x) | 2 (1.00x) | 1.00x |",
		"| runtime (ceil, min 2) | 2 (2.05x) | 2 (3.00x) | 2 (1.00x) | 3.00x |",
		"## Rounding rules over the whole sweep",
		"| rule | sweep, load 0.1 of the quota | sweep, load 0.7 of the quota | worst |",
		"| floor | 2.57x | 2.57x | 2.57x |",
	} {
		assert.Contains(t, out, want)
	}
}

func TestEvalRuleNeedsTheStaticVariant(t *testing.T) {
	sums := results.Summarize(sweepRuns())
	sw := sweeps(sums)
	require.Len(t, sw, 2)
	// On 4 CPUs the runtime's rule at 1.5 is still 2, but nothing ran GOMAXPROCS=3 or 4.
	rs := EvalRule(Rule{"max", maxprocs.Policy{Min: 4}}, sums, sw[0].settings, 4)
	assert.Equal(t, 4, rs[0].Procs)
	assert.True(t, math.IsNaN(rs[0].Regret))
	assert.True(t, math.IsNaN(worst(rs)))
}

func TestSweepChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), SweepFile)
	require.NoError(t, WriteSweepChart(path, results.Summarize(sweepRuns())))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 2*img.Bounds().Dy(), "two panels side by side, one per load")

	assert.ErrorContains(t, WriteSweepChart(path, results.Summarize(sampleRuns()[12:])), "no setting has several CPU quotas")
}

func TestAllKilled(t *testing.T) {
	var killed []string
	for _, s := range results.Summarize(sampleRuns()) {
		if s.Scenario == "memory" && s.AllKilled() {
			killed = append(killed, s.Variant)
		}
	}
	assert.Equal(t, []string{"untuned"}, killed)
}

func TestRunsLineSaysBusy(t *testing.T) {
	runs := sampleRuns()
	runs[0].Busy, runs[0].HostLoad = true, 3.4
	sums := results.Summarize(runs)
	assert.Contains(t, runsLine(sums, sums[0].Setting()), "1 runs on a busy host (load average up to 3.4)")
	assert.NotContains(t, runsLine(sums, sums[2].Setting()), "busy")
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]uint64
		want string
	}{
		{nil, "–"},
		{map[string]uint64{"oom_kill": 1, "under_oom": 0, "failcnt": 12, "memsw_failcnt": 40}, "failcnt 12, memsw_failcnt 40, oom_kill 1, under_oom 0"},
		{map[string]uint64{"low": 0, "high": 0, "max": 31, "oom": 2, "oom_kill": 1, "oom_group_kill": 0, "sock_throttled": 0},
			"high 0, max 31, oom 2, oom_kill 1, oom_group_kill 0, low 0, sock_throttled 0"},
	} {
		assert.Equal(t, tc.want, Events(tc.in))
	}
}

func TestSharedAndLeakTables(t *testing.T) {
	assert.Equal(t, "shared: no CPU quota, memory limit 512 MiB on the parent, shared with a 200 MiB sidecar in a sibling cgroup",
		SettingTitle(results.Setting{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "sibling", SidecarBytes: 200 << 20}))
	assert.Equal(t, "shared: no CPU quota, memory limit 512 MiB shared with a 200 MiB sidecar in the same cgroup (coprocess)",
		SettingTitle(results.Setting{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "coprocess", SidecarBytes: 200 << 20}))
	assert.Equal(t, "shared: no CPU quota, pod-level memory limit 512 MiB shared with a 200 MiB sidecar in another container (pod-level)",
		SettingTitle(results.Setting{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "pod-level", SidecarBytes: 200 << 20}))

	runs := []results.Run{
		{Scenario: "shared", Variant: "fitgo", MemoryBytes: 512 << 20, Layout: "sibling", SidecarBytes: 200 << 20, OOMKills: 1,
			LastProgress: &results.Progress{GOMEMLIMIT: 460 << 20, Requests: 800},
			MemoryEvents: map[string]uint64{"failcnt": 3, "oom_kill": 0}},
		{Scenario: "leak", Variant: "fitgo", MemoryBytes: 512 << 20, OOMKills: 1,
			LastProgress: &results.Progress{GOMEMLIMIT: 460 << 20, Requests: 64000},
			Leak: &results.LeakWindow{ReachedMS: 1500, EndMS: 66500, BrownoutMS: 12000, RaisedMS: 31500,
				Window: &results.Window{StartMS: 1500, Requests: 63000, LatencyP99MS: 42, GCCPUFraction: 0.61}},
			MemoryEvents: map[string]uint64{"oom_kill": 1}},
		{Scenario: "leak", Variant: "untuned", MemoryBytes: 512 << 20, OOMKills: 1},
	}
	var b bytes.Buffer
	require.NoError(t, Table(&b, results.Summarize(runs)))
	out := b.String()
	assert.Regexp(t, `(?m)^variant\s+GOMEMLIMIT\s+GOMEMLIMIT bound at\s+GOMEMLIMIT raised at\s+then lasted\s+ended by\s+GC CPU in window\s+brown-out$`, out)
	assert.Regexp(t, `(?m)^fitgo\s+460 MiB\s+1\.5 s\s+31\.5 s\s+65\.0 s\s+OOM kill\s+61\.0%\s+12\.0 s$`, out)
	assert.Regexp(t, `(?m)^untuned\s+–\s+never\s+never\s+–\s+OOM kill\s+–\s+–$`, out)
	assert.Regexp(t, `(?m)^variant\s+GOMEMLIMIT\s+requests done\s+OOM kills$`, out, "the shared table: only the columns with a figure")
	assert.Regexp(t, `(?m)^fitgo\s+460 MiB\s+800\s+1/1$`, out)

	var md bytes.Buffer
	require.NoError(t, Markdown(&md, Meta{Runner: "local"}, results.Summarize(runs)))
	assert.Contains(t, md.String(), "| variant | GOMEMLIMIT | GOMEMLIMIT bound at | GOMEMLIMIT raised at | then lasted |")
	assert.Contains(t, md.String(), "| variant | p99 ms in window | requests in window | requests done | OOM kills | memory events |\n")
	assert.Contains(t, md.String(), "| fitgo | 42.0 | 63000 | 64000 | 1/1 | oom_kill 1 |")
	assert.Contains(t, md.String(), "| fitgo | failcnt 3, oom_kill 0 |", "the shared setting's appendix: the memory events")

	var bt bytes.Buffer
	require.NoError(t, BenchText(&bt, Meta{Runner: "local"}, runs))
	assert.Contains(t, bt.String(), "BenchmarkLocal/scenario=shared/cpus=0/mem=512Mi/layout=sibling/sidecar=200Mi/variant=fitgo\t800\t")
	assert.Contains(t, bt.String(), "65 limit-window-s\t0.61 window-gc-cpu-fraction\t42 window-p99-ms")
}

// TestHeadingsMatchWhatRan: without a static variant the report has no
// "Sweep" and no regret, footnotes only for the columns shown, main tables
// of at most 8 columns, and stdout lines that fit a terminal.
func TestHeadingsMatchWhatRan(t *testing.T) {
	var cpuOnly []results.Run
	for _, r := range sampleRuns() {
		if r.Scenario == "cpu" {
			cpuOnly = append(cpuOnly, r)
		}
	}
	sums := results.Summarize(cpuOnly)
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, Meta{Runner: "local", CPUs: 2}, sums))
	out := md.String()
	assert.Contains(t, out, "## p99 by CPU quota: cpu, fixed work per request")
	for _, absent := range []string{"Sweep", "static", "regret", "Memory events are", "In the leak scenario", "CPU and memory pressure"} {
		assert.NotContains(t, out, absent)
	}
	assert.Contains(t, out, "Throttled periods are", "the footnote of a column shown")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| variant | GOMAXPROCS") {
			assert.LessOrEqual(t, strings.Count(l, " | ")+1, 8, l)
		}
	}
	var text bytes.Buffer
	require.NoError(t, Table(&text, sums))
	for _, l := range strings.Split(text.String(), "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 120, l)
	}
}

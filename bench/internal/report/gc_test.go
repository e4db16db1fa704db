package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// gcRuns are two runs of the gc scenario: fitgo's default and the policy,
// with half its p99 and a quarter of its GC CPU, GOGC raised to 400 under a
// 700 MiB ceiling.
func gcRuns() []results.Run {
	run := func(v string, p99, gc, idle float64, cycles uint64, peak int64, gogc int, goal int64) results.Run {
		return results.Run{Scenario: "gc", Variant: v, CPUs: 1, MemoryBytes: 1 << 30, Round: 1, MemoryPeakBytes: peak,
			WorkloadName: "heavy (100 MiB live, 100 MiB/s)",
			Workload: &results.Workload{Latency: results.Percentiles{P50: 1, P99: results.Float(p99), P999: 30}, GCCycles: cycles,
				GCCPUSeconds: gc, GCIdleCPUSeconds: idle, UsedCPUSeconds: 20, GOMEMLIMIT: 966367641,
				CPUStat: &results.CPUStat{Periods: 300, ThrottledPeriods: 30}, GOGC: gogc, HeapGoalMaxBytes: goal,
				GCPolicy: &results.GCPolicy{On: v == "fitgo-gc", GOGC: gogc, Base: 100, CeilingBytes: 700 << 20, Reason: "raised"}}}
	}
	return []results.Run{run("fitgo", 20, 4, 1, 15, 300<<20, 100, 200<<20), run("fitgo-gc", 10, 1, 0.5, 3, 750<<20, 400, 500<<20)}
}

// burstRuns are the burst case's: the policy's workload survived and its
// co-process was killed in one run of two; GOGC=off's workload was killed.
func burstRuns() []results.Run {
	var out []results.Run
	for round, killed := range []bool{false, true} {
		for _, r := range gcRuns() {
			r.BurstBytes, r.Round = 1<<30/5, round+1
			r.Sidecar = &results.Sidecar{}
			r.Burst = &results.Burst{AtMS: 10500, GOGC: r.Workload.GOGC, HeapGoalBytes: 450 << 20, Grown: true, GrowMS: 80}
			if r.Variant == "fitgo-gc" {
				r.Sidecar.OOMKilled = killed
			}
			out = append(out, r)
		}
		off := results.Run{Scenario: "gc", Variant: "gogc-off", CPUs: 1, MemoryBytes: 1 << 30, Round: round + 1, WorkloadName: "heavy (100 MiB live, 100 MiB/s)",
			BurstBytes: 1 << 30 / 5, OOMKills: 1, Sidecar: &results.Sidecar{}, Burst: &results.Burst{AtMS: 10200, GOGC: -1, HeapGoalBytes: 900 << 20}}
		out = append(out, off)
	}
	return out
}

func TestGCTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Table(&b, results.Summarize(gcRuns())))
	out := b.String()
	assert.Contains(t, out, "gc, heavy (100 MiB live, 100 MiB/s): CPU quota 1 CPU, memory limit 1024 MiB")
	assert.Contains(t, out, "variant   p99 ms  p99 vs fitgo  GC CPU s  GC CPU vs fitgo  peak memory  GOGC at end  OOM kills\n", "the main table: at most 8 columns")
	assert.Regexp(t, `fitgo-gc +10\.0 +0\.50x +1\.00 +0\.25x +750 MiB +400 +0/1\n`, out)
	assert.Regexp(t, `fitgo +20\.0 +1\.00x +4\.00 +1\.00x +300 MiB +100 +0/1\n`, out)

	b.Reset()
	require.NoError(t, Markdown(&b, Meta{}, results.Summarize(gcRuns())))
	assert.Contains(t, b.String(), "| variant | GOMEMLIMIT | p50 ms | p99.9 ms | GC cycles | GC CPU s w/o idle mark | GC share of CPU | w/o idle mark | throttled periods | heap goal max | policy ceiling | policy GOGC | policy reason |\n",
		"the rest in the appendix; no burst column without a burst")
	assert.Contains(t, b.String(), "| fitgo-gc | 922 MiB | 1.00 | 30.0 | 3 | 0.50 | 5.0% | 2.5% | 30 (10.0%) | 500 MiB | 700 MiB | 400 | raised |")
	assert.Contains(t, b.String(), "| fitgo | 922 MiB | 1.00 | 30.0 | 15 | 3.00 | 20.0% | 15.0% | 30 (10.0%) | 200 MiB | – | – | – |", "the policy where it is on")
}

func TestGCBurstTable(t *testing.T) {
	sums := results.Summarize(burstRuns())
	require.Len(t, sums, 3)
	var b bytes.Buffer
	require.NoError(t, Markdown(&b, Meta{}, sums))
	md := b.String()
	assert.Contains(t, md, "## gc, heavy (100 MiB live, 100 MiB/s): CPU quota 1 CPU, memory limit 1024 MiB, burst: a co-process grows by 205 MiB (20 %)\n")
	assert.Contains(t, md, "| fitgo-gc | 10.0 | 0.50x | 1.00 | 0.25x | 750 MiB | 400 | 0/2 (co-process 1/2) |", "which process was killed")
	assert.Contains(t, md, "| gogc-off | – | – | – | – | – | – | 2/2 (co-process 0/2) |")
	assert.Contains(t, md, "- At 1 CPU in 1024 MiB, heavy (100 MiB live, 100 MiB/s), with a co-process growing by 205 MiB the GC policy (fitgo-gc) spent")
	assert.Contains(t, md, "OOM-killed 0/2 times, its co-process 1/2 times (fitgo's default: 0/2 and 0/2).")
	assert.Contains(t, md, " | policy reason | burst at |\n")
	assert.Contains(t, md, "| 500 MiB | 700 MiB | 400 | raised | 10.5 s, GOGC 400, heap goal 450 MiB; held in 2/2 |\n")
	assert.Contains(t, md, "| – | – | – | – | 10.2 s, GOGC off, heap goal 900 MiB; held in 0/2 |\n")
}

// TestGCChart: a row per setting of the gc scenario, the light workload's
// and the burst's included, two panels each.
func TestGCBenchText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, BenchText(&b, Meta{Runner: "local"}, burstRuns()[:1]))
	assert.Contains(t, b.String(), "\nBenchmarkLocal/scenario=gc/cpus=1/mem=1024Mi/workload=heavy/burst=205Mi/variant=fitgo\t")
}

func TestGCChart(t *testing.T) {
	light := gcRuns()
	for i := range light {
		light[i].WorkloadName = "light (30 MiB live, 5 MiB/s)"
	}
	path := filepath.Join(t.TempDir(), "chart.png")
	require.NoError(t, WriteChart(path, results.Summarize(append(append(gcRuns(), light...), burstRuns()...))))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dy(), img.Bounds().Dx()/2, "three rows of charts")
}

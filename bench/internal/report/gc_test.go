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
// with half its p99 and a quarter of its GC CPU.
func gcRuns() []results.Run {
	run := func(v string, p99, gc, idle float64, cycles uint64, peak int64) results.Run {
		return results.Run{Scenario: "gc", Variant: v, CPUs: 1, MemoryBytes: 1 << 30, Round: 1, MemoryPeakBytes: peak,
			Workload: &results.Workload{Latency: results.Percentiles{P50: 1, P99: results.Float(p99), P999: 30}, GCCycles: cycles,
				GCCPUSeconds: gc, GCIdleCPUSeconds: idle, UsedCPUSeconds: 20, GOMEMLIMIT: 966367641,
				CPUStat: &results.CPUStat{Periods: 300, ThrottledPeriods: 30}}}
	}
	return []results.Run{run("fitgo", 20, 4, 1, 15, 300<<20), run("fitgo-gc", 10, 1, 0.5, 3, 750<<20)}
}

func TestGCTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Table(&b, results.Summarize(gcRuns())))
	out := b.String()
	assert.Contains(t, out, "variant   p99 ms  p99 vs fitgo  GC cycles  GC CPU s  GC CPU vs fitgo  peak memory  OOM kills\n", "the main table: at most 8 columns")
	assert.Regexp(t, `fitgo-gc +10\.0 +0\.50x +3 +1\.00 +0\.25x +750 MiB +0/1`, out)
	assert.Regexp(t, `fitgo +20\.0 +1\.00x +15 +4\.00 +1\.00x +300 MiB +0/1`, out)

	b.Reset()
	require.NoError(t, Markdown(&b, Meta{}, results.Summarize(gcRuns())))
	assert.Contains(t, b.String(), "| variant | GOMEMLIMIT | p50 ms | p99.9 ms | GC CPU s w/o idle mark | GC share of CPU | w/o idle mark | throttled periods |\n", "the rest in the appendix")
	assert.Contains(t, b.String(), "| fitgo-gc | 922 MiB | 1.00 | 30.0 | 0.50 | 5.0% | 2.5% | 30 (10.0%) |")
}

func TestGCChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.png")
	require.NoError(t, WriteChart(path, results.Summarize(gcRuns())))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
}

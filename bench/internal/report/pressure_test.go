package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// The pressure columns and units appear when the runs have pressure figures
// (cgroup v2), and not otherwise.
func TestPressureColumns(t *testing.T) {
	runs := sampleRuns()
	var buf bytes.Buffer
	require.NoError(t, Table(&buf, results.Summarize(runs)))
	assert.NotContains(t, buf.String(), "pressure")
	buf.Reset()
	require.NoError(t, BenchText(&buf, Meta{Runner: "local"}, runs))
	assert.NotContains(t, buf.String(), "pressure")

	for i := range runs {
		if runs[i].Workload != nil && runs[i].Scenario == "cpu" {
			runs[i].Workload.Pressure = &results.Pressure{WindowMS: 10000, CPUSomeMS: 4000, MemorySomeMS: 100}
		}
	}
	sums := results.Summarize(runs)
	buf.Reset()
	require.NoError(t, Table(&buf, sums))
	assert.NotContains(t, buf.String(), "pressure", "stdout's main tables leave it to the appendix")
	buf.Reset()
	require.NoError(t, Markdown(&buf, Meta{Runner: "local"}, sums))
	assert.Contains(t, buf.String(), "| CPU pressure | memory pressure |")
	assert.Contains(t, buf.String(), "| 40.0% | 1.0% |")
	assert.Contains(t, buf.String(), "CPU and memory pressure, where the kernel has pressure stall information", "its footnote, as the column is there")

	buf.Reset()
	require.NoError(t, BenchText(&buf, Meta{Runner: "local"}, runs))
	assert.Contains(t, buf.String(), "\t0.4 cpu-pressure\t0.01 memory-pressure\t0 oom-kills")
}

package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// killed is a run of the shared scenario's co-process layout that the
// cgroup OOM-killed.
func killed(variant string, round int) results.Run {
	return results.Run{Scenario: "shared", Variant: variant, MemoryBytes: 512 << 20, Layout: "coprocess", SidecarBytes: 200 << 20,
		Round: round, ExitCode: -1, Signal: "killed", OOMKills: 1}
}

func TestVerdict(t *testing.T) {
	cpuRuns := func(fitgo, runtime [3]results.Float, busy bool) []results.Run {
		var runs []results.Run
		for i := range 3 {
			f, r := run("fitgo", 0.5, i+1, 1, fitgo[i], 0.1), run("runtime", 0.5, i+1, 2, runtime[i], 0.4)
			f.Busy, f.HostLoad = busy, 3.5
			runs = append(runs, f, r)
		}
		return runs
	}
	shared := func() []results.Run {
		var runs []results.Run
		for i := range 3 {
			f := killed("fitgo", i+1)
			f.OOMKills, f.ExitCode, f.Signal = 0, 0, ""
			f.Workload = &results.Workload{GOMAXPROCS: 2, GOMEMLIMIT: 281 << 20, Latency: results.Percentiles{P99: 30}, GCCPUFraction: 0.12}
			runs = append(runs, f, killed("automaxprocs+automemlimit", i+1))
		}
		return runs
	}
	for _, tc := range []struct {
		name string
		runs []results.Run
		want []string
	}{{
		name: "apart",
		runs: cpuRuns([3]results.Float{78, 79, 80}, [3]results.Float{99, 100, 101}, false),
		want: []string{"At 0.5 CPU fitgo's p99 was 0.79× the runtime's (79.0 against 100 ms): lower, the ranges of the runs do not overlap. " +
			"GOMAXPROCS 1 against 2; throttled in 10.0% of CFS periods against 40.0%."},
	}, {
		name: "worse",
		runs: cpuRuns([3]results.Float{120, 125, 130}, [3]results.Float{99, 100, 101}, false),
		want: []string{"At 0.5 CPU fitgo's p99 was 1.25× the runtime's (125 against 100 ms): higher, the ranges of the runs do not overlap. " +
			"GOMAXPROCS 1 against 2; throttled in 10.0% of CFS periods against 40.0%."},
	}, {
		name: "overlap",
		runs: cpuRuns([3]results.Float{70, 142, 150}, [3]results.Float{90, 100, 145}, false),
		want: []string{"At 0.5 CPU fitgo's p99 was 1.42× the runtime's (142 against 100 ms): within noise, the ranges of the runs overlap. " +
			"GOMAXPROCS 1 against 2; throttled in 10.0% of CFS periods against 40.0%."},
	}, {
		name: "busy host",
		runs: cpuRuns([3]results.Float{70, 142, 150}, [3]results.Float{90, 100, 145}, true),
		want: []string{"At 0.5 CPU fitgo's p99 was 1.42× the runtime's (142 against 100 ms): within noise, the ranges of the runs overlap. " +
			"GOMAXPROCS 1 against 2; throttled in 10.0% of CFS periods against 40.0%. " +
			"Busy host: 3 of 6 runs competed with other work (load average up to 3.5 on 2 CPUs): noisy."},
	}, {
		name: "kills",
		runs: shared(),
		want: []string{"In 512 MiB beside a 200 MiB co-process fitgo was OOM-killed 0/3 times; automaxprocs+automemlimit 3/3. " +
			"fitgo's cost: GOMEMLIMIT 281 MiB, GC CPU 12.0%, p99 30.0 ms."},
	}, {
		name: "no runtime variant: no cpu verdict",
		runs: cpuRuns([3]results.Float{78, 79, 80}, [3]results.Float{99, 100, 101}, false)[:1],
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Verdict(results.Summarize(tc.runs), 2))
		})
	}
}

func TestVerdictOpensReportAndStdout(t *testing.T) {
	sums := results.Summarize(sampleRuns())
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, Meta{Runner: "local", CPUs: 2}, sums))
	assert.Contains(t, md.String(), "# fitgo benchmark (local runner)\n\n## Verdict\n\n- At 0.5 CPU fitgo's p99 was 0.54×")
	var out bytes.Buffer
	require.NoError(t, WriteVerdict(&out, sums, 2))
	assert.Contains(t, out.String(), "Verdict:\n  - At 0.5 CPU fitgo's p99 was 0.54×")
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		assert.LessOrEqual(t, len(l), 100, "%s", l)
	}
}

package results

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func wl(maxprocs int, p99 Float, throttled uint64) *Workload {
	return &Workload{
		Type: TypeResult, GOMAXPROCS: maxprocs, GOMEMLIMIT: math.MaxInt64,
		Latency:    Percentiles{P50: 1, P99: p99, P999: p99 * 2, Max: p99 * 3},
		Requests:   1000,
		DurationMS: 1000,
		CPUStat:    &CPUStat{Periods: 100, ThrottledPeriods: throttled, ThrottledMS: float64(throttled)},
	}
}

func TestSummarize(t *testing.T) {
	runs := []Run{
		{Scenario: "cpu", Variant: "runtime", CPUs: 1, Round: 1, Workload: wl(2, 60, 14)},
		{Scenario: "cpu", Variant: "fitgo", CPUs: 1, Round: 1, Workload: wl(1, 30, 2)},
		{Scenario: "cpu", Variant: "runtime", CPUs: 1, Round: 2, Workload: wl(2, 50, 10)},
		{Scenario: "cpu", Variant: "fitgo", CPUs: 1, Round: 2, Workload: wl(1, 34, 4)},
		{Scenario: "cpu", Variant: "runtime", CPUs: 1, Round: 3, Workload: wl(2, 70, 20)},
		{Scenario: "cpu", Variant: "fitgo", CPUs: 1, Round: 3, Workload: wl(1, 20, 3)},
		{Scenario: "memory", Variant: "untuned", MemoryBytes: 256 << 20, Round: 1, OOMKills: 1, ExitCode: -1, Signal: "killed",
			LastProgress: &Progress{Type: TypeProgress, Requests: 123}},
	}
	sums := Summarize(runs)
	require.Len(t, sums, 3)

	rt := sums[0]
	assert.Equal(t, "runtime", rt.Variant)
	assert.Equal(t, 3, rt.Runs)
	assert.Equal(t, 3, rt.CompletedRuns)
	assert.Equal(t, Float(2), rt.GOMAXPROCS)
	assert.Equal(t, Float(60), rt.LatencyP99MS)
	assert.Equal(t, Float(120), rt.LatencyP999MS)
	assert.Equal(t, Float(0.14), rt.ThrottledPeriodsRatio)
	assert.Equal(t, [2]Float{50, 70}, rt.Range["latency_p99_ms"])
	assert.Equal(t, [2]Float{0.10, 0.20}, rt.Range["throttled_periods_ratio"])
	assert.Equal(t, Float(1000), rt.RequestsPerSec)
	assert.True(t, math.IsNaN(float64(rt.GOMEMLIMITBytes)), "no memory limit is NaN (null)")

	fg := sums[1]
	assert.Equal(t, "fitgo", fg.Variant)
	assert.Equal(t, Float(30), fg.LatencyP99MS)
	assert.Equal(t, Float(0.03), fg.ThrottledPeriodsRatio)

	mem := sums[2]
	assert.Equal(t, "memory", mem.Scenario)
	assert.Equal(t, uint64(1), mem.OOMKills)
	assert.Equal(t, 0, mem.CompletedRuns)
	assert.Equal(t, 0, mem.FailedRuns, "an OOM kill is not a failure of the harness")
	assert.Equal(t, Float(123), mem.Requests, "a killed run's work comes from its last progress line")
	assert.True(t, math.IsNaN(float64(mem.LatencyP99MS)))

	// The JSON has the documented keys, with null for measurements no run produced.
	b, err := json.Marshal(sums)
	require.NoError(t, err)
	var decoded []map[string]any
	require.NoError(t, json.Unmarshal(b, &decoded))
	for _, k := range []string{"scenario", "variant", "cpus", "runs", "gomaxprocs", "latency_p99_ms",
		"latency_p999_ms", "gc_pause_p99_ms", "throttled_periods_ratio", "oom_kills"} {
		assert.Contains(t, decoded[0], k)
	}
	assert.Nil(t, decoded[2]["latency_p99_ms"])
	assert.Equal(t, 0.14, decoded[0]["throttled_periods_ratio"])

	// And it round-trips.
	var back []Summary
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sums[0].LatencyP99MS, back[0].LatencyP99MS)
	assert.True(t, math.IsNaN(float64(back[2].LatencyP99MS)))
}

func TestThrottlingPrefersTheWorkloadWindow(t *testing.T) {
	r := Run{CPUStat: &CPUStat{Periods: 10, ThrottledPeriods: 5}}
	assert.Equal(t, 0.5, r.Throttling().ThrottledRatio())
	r.Workload = &Workload{CPUStat: &CPUStat{Periods: 10, ThrottledPeriods: 1}}
	assert.Equal(t, 0.1, r.Throttling().ThrottledRatio())
	assert.True(t, math.IsNaN((&CPUStat{}).ThrottledRatio()))
	assert.True(t, math.IsNaN((*CPUStat)(nil).ThrottledRatio()))
}

func TestParseOutput(t *testing.T) {
	out := []byte(`starting
{"type":"progress","variant":"fitgo","phase":"run","requests":10,"gomaxprocs":1}
2026-11-02T10:00:00Z {"type":"progress","variant":"fitgo","phase":"run","requests":20,"gomaxprocs":2}
{"type":"result","variant":"fitgo","gomaxprocs":2,"requests":30,"latency_ms":{"p50":1,"p99":2,"p999":3,"max":4}}
{"type":"other"}
not json {
`)
	res, last, err := ParseOutput(out)
	require.NoError(t, err)
	assert.Equal(t, uint64(30), res.Requests)
	assert.Equal(t, Float(2), res.Latency.P99)
	assert.Equal(t, uint64(20), last.Requests)
	assert.Equal(t, 2, last.GOMAXPROCS)

	_, last, err = ParseOutput([]byte(`{"type":"progress","requests":5}`))
	require.ErrorIs(t, err, ErrNoResult)
	assert.Equal(t, uint64(5), last.Requests)

	_, err = ParseLine([]byte(`{"type":"nope"}`))
	require.Error(t, err)
	_, err = ParseLine([]byte(`[]`))
	require.Error(t, err)
}

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal([]Float{1.5, Float(math.NaN()), Float(math.Inf(1))})
	require.NoError(t, err)
	assert.Equal(t, `[1.5,null,null]`, string(b))
	var f Float
	require.NoError(t, json.Unmarshal([]byte("2.25"), &f))
	assert.Equal(t, Float(2.25), f)
	require.Error(t, json.Unmarshal([]byte(`"x"`), &f))
}

func TestSortSettings(t *testing.T) {
	sums := []Summary{
		{Scenario: "cpu", CPUs: 1.5}, {Scenario: "memory", MemoryBytes: 1}, {Scenario: "cpu", CPUs: 0.5},
		{Scenario: "cpu", CPUs: 1.5, Variant: "x"}, {Scenario: "cpu", CPUs: 0.5, Load: 0.7},
	}
	assert.Equal(t, []Setting{{Scenario: "cpu", CPUs: 0.5}, {Scenario: "cpu", CPUs: 1.5}, {Scenario: "cpu", CPUs: 0.5, Load: 0.7}, {Scenario: "memory", MemoryBytes: 1}}, SortSettings(sums))
}

func TestAddRegret(t *testing.T) {
	p99 := func(variant string, cpus float64, v Float) Summary {
		return Summary{Scenario: "sweep", Variant: variant, CPUs: cpus, Load: 0.7, LatencyP99MS: v}
	}
	sums := []Summary{
		p99("fitgo", 1, 6), p99("GOMAXPROCS=1", 1, 5), p99("GOMAXPROCS=2", 1, 20), p99("runtime", 1, 21),
		p99("fitgo", 1.5, 4), p99("runtime", 1.5, 2), // no static variant: no regret
		p99("fitgo", 2, Float(math.NaN())), p99("GOMAXPROCS=2", 2, 3),
	}
	AddRegret(sums)
	want := []struct {
		regret float64
		base   string
	}{
		{1.2, "GOMAXPROCS=1"}, {1, "GOMAXPROCS=1"}, {4, "GOMAXPROCS=1"}, {4.2, "GOMAXPROCS=1"},
		{math.NaN(), ""}, {math.NaN(), ""},
		{math.NaN(), "GOMAXPROCS=2"}, {1, "GOMAXPROCS=2"},
	}
	for i, w := range want {
		assert.Equal(t, w.base, sums[i].RegretBase, sums[i].Variant)
		if math.IsNaN(w.regret) {
			assert.True(t, math.IsNaN(float64(sums[i].Regret)))
			continue
		}
		assert.InDelta(t, w.regret, float64(sums[i].Regret), 1e-9, "%s at %v", sums[i].Variant, sums[i].CPUs)
	}
}

func TestSummarizeCountsBusyRuns(t *testing.T) {
	runs := []Run{
		{Scenario: "cpu", Variant: "a", CPUs: 1, HostLoad: 0.5},
		{Scenario: "cpu", Variant: "a", CPUs: 1, HostLoad: 3.1, Busy: true},
	}
	s := Summarize(runs)
	require.Len(t, s, 1)
	assert.Equal(t, 1, s[0].BusyRuns)
	assert.Equal(t, 3.1, s[0].MaxHostLoad)
}

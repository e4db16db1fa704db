package results

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSidecarLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     SidecarLine
		err      bool
	}{
		{name: "held", in: `{"type":"sidecar","state":"held","held_bytes":209715200,"rss_bytes":211000000}` + "\n",
			want: SidecarLine{Type: TypeSidecar, State: "held", HeldBytes: 200 << 20, RSSBytes: 211000000}},
		{name: "freed", in: `{"type":"sidecar","state":"freed","rss_bytes":3000000}`,
			want: SidecarLine{Type: TypeSidecar, State: "freed", RSSBytes: 3000000}},
		{name: "killed (the co-process launcher's)", in: `{"type":"sidecar","state":"killed","held_bytes":0,"rss_bytes":0}`,
			want: SidecarLine{Type: TypeSidecar, State: SidecarKilled}},
		{name: "a workload line", in: `{"type":"progress","requests":5}`, err: true},
		{name: "an unknown state", in: `{"type":"sidecar","state":"sleeping"}`, err: true},
		{name: "not JSON", in: `fatal error: out of memory`, err: true},
		{name: "empty", in: ``, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSidecarLine([]byte(tc.in))
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSummarizeShared(t *testing.T) {
	shared := func(layout, v string, round int) Run {
		return Run{Scenario: "shared", Variant: v, MemoryBytes: 512 << 20, Layout: layout, SidecarBytes: 200 << 20, Round: round}
	}
	killed := func(r Run, limit int64, usage int64, ev map[string]uint64) Run {
		r.OOMKills, r.Signal, r.ExitCode = 1, "killed", -1
		r.LastProgress = &Progress{Type: TypeProgress, GOMEMLIMIT: limit, Requests: 700}
		r.Sidecar = &Sidecar{RSSBytes: 202 << 20, LimitedUsageBytes: usage}
		r.MemoryEvents = ev
		return r
	}
	served := func(r Run, limit int64) Run {
		r.Workload = &Workload{GOMEMLIMIT: limit, Requests: 10000, DurationMS: 10000}
		r.Sidecar = &Sidecar{RSSBytes: 202 << 20, LimitedUsageBytes: 203 << 20, OOMKilled: r.Round == 2}
		r.MemoryEvents = map[string]uint64{"failcnt": 0, "oom_kill": 0}
		return r
	}
	runs := []Run{
		killed(shared("sibling", "fitgo", 1), 460<<20, 201<<20, map[string]uint64{"failcnt": 10, "oom_kill": 0}),
		killed(shared("sibling", "fitgo", 2), 460<<20, 205<<20, map[string]uint64{"failcnt": 5, "oom_kill": 0, "memsw_failcnt": 3}),
		killed(shared("coprocess", "untuned", 1), math.MaxInt64, 201<<20, map[string]uint64{"oom_kill": 1}),
		served(shared("sibling", "oracle-headroom", 1), 280<<20),
		served(shared("sibling", "oracle-headroom", 2), 280<<20),
	}
	sums := Summarize(runs)
	require.Len(t, sums, 3)
	f := sums[0]
	assert.Equal(t, Setting{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "sibling", SidecarBytes: 200 << 20}, f.Setting())
	assert.Equal(t, "sibling", f.Layout)
	assert.Equal(t, uint64(2), f.OOMKills)
	assert.Equal(t, 2, f.GOMEMLIMITRuns, "killed runs report their GOMEMLIMIT in progress lines")
	assert.Equal(t, Float(460<<20), f.GOMEMLIMITBytes)
	assert.Equal(t, map[string]uint64{"failcnt": 15, "oom_kill": 0, "memsw_failcnt": 3}, f.MemoryEvents, "summed over the runs")
	assert.Equal(t, Float(203<<20), f.LimitedUsageBytes, "the median")
	assert.Zero(t, f.SidecarOOMKills)

	u := sums[1]
	assert.Equal(t, "coprocess", u.Layout)
	assert.Equal(t, 1, u.GOMEMLIMITRuns)
	assert.True(t, math.IsNaN(float64(u.GOMEMLIMITBytes)), "no GOMEMLIMIT: off")

	o := sums[2]
	assert.Equal(t, 1, o.SidecarOOMKills)
	assert.Equal(t, uint64(0), o.OOMKills)
	assert.Equal(t, Float(280<<20), o.GOMEMLIMITBytes)
	assert.Equal(t, []Setting{
		{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "coprocess", SidecarBytes: 200 << 20},
		{Scenario: "shared", MemoryBytes: 512 << 20, Layout: "sibling", SidecarBytes: 200 << 20},
	}, SortSettings(sums))
}

func TestSummarizeLeak(t *testing.T) {
	leak := func(v string, reached, end, gc float64, p99 Float) Run {
		r := Run{Scenario: "leak", Variant: v, MemoryBytes: 512 << 20, OOMKills: 1,
			LastProgress: &Progress{GOMEMLIMIT: 460 << 20, Requests: 60000}}
		if reached > 0 {
			r.Leak = &LeakWindow{ReachedMS: reached, EndMS: end, BrownoutMS: 2000,
				Window: &Window{StartMS: reached, Requests: 50000, LatencyP99MS: p99, GCCPUFraction: Float(gc)}}
		}
		return r
	}
	sums := Summarize([]Run{
		leak("fitgo", 1000, 61000, 0.3, 5),
		leak("fitgo", 2000, 72000, 0.5, 9),
		leak("fitgo", 1000, 65000, 0.4, 7),
		leak("untuned", 0, 0, 0, 0),
	})
	require.Len(t, sums, 2)
	f := sums[0]
	assert.Equal(t, Float(1), f.ReachedSeconds)
	assert.Equal(t, Float(64), f.WindowSeconds)
	assert.Equal(t, [2]Float{60, 70}, f.Range["window_s"])
	assert.InDelta(t, 0.4, float64(f.WindowGCCPUFraction), 1e-9)
	assert.Equal(t, Float(7), f.WindowLatencyP99MS)
	assert.Equal(t, Float(50000), f.WindowRequests)
	assert.Equal(t, Float(2), f.BrownoutSeconds)
	assert.Equal(t, Float(60000), f.Requests, "a killed run's requests from its last progress line")
	u := sums[1]
	for _, v := range []Float{u.ReachedSeconds, u.WindowSeconds, u.WindowGCCPUFraction, u.WindowLatencyP99MS, u.BrownoutSeconds} {
		assert.True(t, math.IsNaN(float64(v)), "no window without GOMEMLIMIT binding")
	}
}

package results

import (
	"cmp"
	"math"
	"slices"

	"github.com/fitgo/fitgo/bench/internal/stats"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

// Summary is one object of results.json: the runs of one variant in one
// scenario setting, each measurement the median over the runs that produced it.
// Measurements no run produced are NaN (null in JSON).
type Summary struct {
	Scenario    string  `json:"scenario"`
	Variant     string  `json:"variant"`
	CPUs        float64 `json:"cpus"`           // CPU quota in cores, 0 for none
	MemoryBytes int64   `json:"memory_bytes"`   // memory limit, 0 for none
	Load        float64 `json:"load,omitempty"` // request work as a fraction of the quota, 0 for the fixed work
	// Layout and SidecarBytes: the shared scenario's sidecar (Run.Layout).
	Layout       string `json:"layout,omitempty"`
	SidecarBytes int64  `json:"sidecar_bytes,omitempty"`
	// WorkloadName and BurstBytes: the gc scenario's workload and burst
	// (Run.WorkloadName).
	WorkloadName string `json:"workload_name,omitempty"`
	BurstBytes   int64  `json:"burst_bytes,omitempty"`
	// Runs is the number of runs; CompletedRuns those that printed a result.
	Runs          int `json:"runs"`
	CompletedRuns int `json:"completed_runs"`

	GOMAXPROCS      Float `json:"gomaxprocs"`
	GOMEMLIMITBytes Float `json:"gomemlimit_bytes"` // null: no limit (math.MaxInt64) in every run, or none reported
	// GOMEMLIMITRuns counts the runs that reported their GOMEMLIMIT, in a
	// result or (killed runs) a progress line.
	GOMEMLIMITRuns int `json:"gomemlimit_runs"`

	LatencyP50MS  Float `json:"latency_p50_ms"`
	LatencyP99MS  Float `json:"latency_p99_ms"`
	LatencyP999MS Float `json:"latency_p999_ms"`
	LatencyMaxMS  Float `json:"latency_max_ms"`

	GCCycles      Float `json:"gc_cycles"`
	GCPauseP50MS  Float `json:"gc_pause_p50_ms"`
	GCPauseP99MS  Float `json:"gc_pause_p99_ms"`
	GCPauseMaxMS  Float `json:"gc_pause_max_ms"`
	GCCPUFraction Float `json:"gc_cpu_fraction"`
	// GCCPUSeconds is the GC's CPU in the window, GCCPUNoIdleSeconds the
	// same without idle marking; GCShare and GCShareNoIdle are those over
	// the CPU the process used (Workload.UsedCPUSeconds).
	GCCPUSeconds       Float `json:"gc_cpu_seconds"`
	GCCPUNoIdleSeconds Float `json:"gc_cpu_noidle_seconds"`
	GCShare            Float `json:"gc_share"`
	GCShareNoIdle      Float `json:"gc_share_noidle"`
	// GOGC is the GOGC at the end of the window (-1: off), HeapGoalMaxBytes
	// the largest heap goal in it (Workload.GOGC, HeapGoalMaxBytes).
	GOGC             Float `json:"gogc"`
	HeapGoalMaxBytes Float `json:"heap_goal_max_bytes"`
	// GCCeilingBytes and GCPolicyGOGC are fitgo's GC policy at the end of
	// the window (Workload.GCPolicy), over the runs where it was on;
	// GCReasons its reasons there, each once, in order of first appearance.
	GCCeilingBytes Float    `json:"gc_ceiling_bytes"`
	GCPolicyGOGC   Float    `json:"gc_policy_gogc"`
	GCReasons      []string `json:"gc_reasons,omitempty"`
	// The burst (Run.Burst): the window age when it began (s), the GOGC
	// and heap goal then, and the runs whose co-process held it.
	BurstAtSeconds     Float `json:"burst_at_s"`
	BurstGOGC          Float `json:"burst_gogc"`
	BurstHeapGoalBytes Float `json:"burst_heap_goal_bytes"`
	BurstsGrown        int   `json:"bursts_grown,omitempty"`
	// ThrottledPeriods is the count of throttled CFS periods in the window.
	ThrottledPeriods Float `json:"throttled_periods"`
	// MemoryPeakBytes is the limited cgroup's peak usage (Run.MemoryPeakBytes).
	MemoryPeakBytes Float `json:"memory_peak_bytes"`
	// OOMCaptures is the OOM captures a run left (Run.OOMCaptures); NaN for
	// the variants without the capture.
	OOMCaptures       Float `json:"oom_captures"`
	SchedLatencyP99MS Float `json:"sched_latency_p99_ms"`

	// ThrottledPeriodsRatio is throttled periods / periods (0 to 1).
	ThrottledPeriodsRatio Float `json:"throttled_periods_ratio"`
	ThrottledMS           Float `json:"throttled_ms"`
	// CPUPressure and MemoryPressure are the shares of the window in which
	// some task waited for the CPU or for memory (pressure stall
	// information); NaN where the kernel has none for the cgroup (cgroup v1).
	CPUPressure    Float `json:"cpu_pressure"`
	MemoryPressure Float `json:"memory_pressure"`

	Requests       Float `json:"requests"`
	RequestsPerSec Float `json:"requests_per_s"`
	PeakRSSBytes   Float `json:"peak_rss_bytes"`
	CPUSeconds     Float `json:"cpu_seconds"`

	// OOMKills is the total number of OOM kills over the runs (each run is one
	// process, so at most one per run).
	OOMKills uint64 `json:"oom_kills"`
	// SidecarOOMKills counts the runs whose sidecar was OOM-killed.
	SidecarOOMKills int `json:"sidecar_oom_kills,omitempty"`
	// MemoryEvents sums each memory event counter of the limited cgroup
	// (Run.MemoryEvents) over the runs.
	MemoryEvents map[string]uint64 `json:"memory_events,omitempty"`
	// LimitedUsageBytes is the median usage of the limited cgroup with only
	// the sidecar running (Sidecar.LimitedUsageBytes).
	LimitedUsageBytes Float `json:"limited_usage_bytes"`
	// The limit window (Run.Leak), medians over the runs that reached
	// GOMEMLIMIT: when (process age, s), how long until the end, the GC CPU
	// fraction, p99 and requests in the window, and the brown-out time.
	ReachedSeconds      Float `json:"reached_s"`
	WindowSeconds       Float `json:"window_s"`
	WindowGCCPUFraction Float `json:"window_gc_cpu_fraction"`
	WindowLatencyP99MS  Float `json:"window_latency_p99_ms"`
	WindowRequests      Float `json:"window_requests"`
	BrownoutSeconds     Float `json:"brownout_s"`
	// RaisedSeconds is when GOMEMLIMIT first rose (LeakWindow.RaisedMS),
	// over the runs where it did.
	RaisedSeconds Float `json:"raised_s"`
	// FailedRuns counts runs that ended without a result for another reason.
	FailedRuns int `json:"failed_runs"`
	// MaxHostLoad is the highest host load average at the end of a run;
	// BusyRuns counts the runs on a busy host (Run.Busy).
	MaxHostLoad float64 `json:"max_host_load"`
	BusyRuns    int     `json:"busy_runs"`

	// Regret is LatencyP99MS over the best static variant's (GOMAXPROCS=n)
	// in the same setting; NaN when either is missing (a setting without a
	// static variant has none). Set by AddRegret.
	Regret Float `json:"regret"`
	// RegretBase names the variant Regret compares with.
	RegretBase string `json:"regret_base,omitempty"`

	// Range holds [min, max] over the runs for each median above, by JSON key.
	Range map[string][2]Float `json:"range"`
}

// AllKilled reports whether every run was OOM-killed: there is no latency
// to show, and a chart or table must say so rather than show it as fast.
func (s Summary) AllKilled() bool { return s.CompletedRuns == 0 && s.OOMKills > 0 }

// Setting identifies a scenario setting: the runs a Summary aggregates.
type Setting struct {
	Scenario     string
	CPUs         float64
	MemoryBytes  int64
	Load         float64
	Layout       string
	SidecarBytes int64
	WorkloadName string
	BurstBytes   int64
}

// Setting returns the scenario setting of s.
func (s Summary) Setting() Setting {
	return Setting{s.Scenario, s.CPUs, s.MemoryBytes, s.Load, s.Layout, s.SidecarBytes, s.WorkloadName, s.BurstBytes}
}

// Setting returns the scenario setting of r.
func (r Run) Setting() Setting {
	return Setting{r.Scenario, r.CPUs, r.MemoryBytes, r.Load, r.Layout, r.SidecarBytes, r.WorkloadName, r.BurstBytes}
}

// Summarize groups runs by scenario setting and variant, in order of first
// appearance, and summarises each group.
func Summarize(runs []Run) []Summary {
	type key struct {
		Setting
		variant string
	}
	var order []key
	groups := map[key][]Run{}
	for _, r := range runs {
		k := key{r.Setting(), r.Variant}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		out = append(out, summarize(groups[k]))
	}
	AddRegret(out)
	return out
}

// AddRegret sets Regret and RegretBase of each summary: its median p99 over
// the lowest median p99 of the static variants (GOMAXPROCS=n) in its
// setting. A setting without a static variant has no regret (NaN): the best
// of the variants that ran would be a baseline chosen by the results, which
// ranks the variant that happened to be fastest best by construction.
func AddRegret(sums []Summary) {
	for _, st := range SortSettings(sums) {
		best := -1
		for i, s := range sums {
			p := float64(s.LatencyP99MS)
			if s.Setting() != st || math.IsNaN(p) || !(p > 0) || !variant.IsStatic(s.Variant) {
				continue
			}
			if best < 0 || p < float64(sums[best].LatencyP99MS) {
				best = i
			}
		}
		for i := range sums {
			if sums[i].Setting() != st {
				continue
			}
			sums[i].Regret, sums[i].RegretBase = Float(math.NaN()), ""
			if best >= 0 {
				sums[i].RegretBase = sums[best].Variant
				sums[i].Regret = sums[i].LatencyP99MS / sums[best].LatencyP99MS
			}
		}
	}
}

// metric extracts one measurement from a run; NaN when the run lacks it.
type metric struct {
	key string
	get func(Run) float64
	set func(*Summary, Float)
}

func fromWorkload(f func(*Workload) float64) func(Run) float64 {
	return func(r Run) float64 {
		if r.Workload == nil {
			return math.NaN()
		}
		return f(r.Workload)
	}
}

var metrics = []metric{
	{"gomaxprocs", fromWorkload(func(w *Workload) float64 { return float64(w.GOMAXPROCS) }), func(s *Summary, v Float) { s.GOMAXPROCS = v }},
	{"gomemlimit_bytes", func(r Run) float64 {
		v, ok := gomemlimit(r)
		if !ok || v == math.MaxInt64 {
			return math.NaN()
		}
		return float64(v)
	}, func(s *Summary, v Float) { s.GOMEMLIMITBytes = v }},
	{"latency_p50_ms", fromWorkload(func(w *Workload) float64 { return float64(w.Latency.P50) }), func(s *Summary, v Float) { s.LatencyP50MS = v }},
	{"latency_p99_ms", fromWorkload(func(w *Workload) float64 { return float64(w.Latency.P99) }), func(s *Summary, v Float) { s.LatencyP99MS = v }},
	{"latency_p999_ms", fromWorkload(func(w *Workload) float64 { return float64(w.Latency.P999) }), func(s *Summary, v Float) { s.LatencyP999MS = v }},
	{"latency_max_ms", fromWorkload(func(w *Workload) float64 { return float64(w.Latency.Max) }), func(s *Summary, v Float) { s.LatencyMaxMS = v }},
	{"gc_cycles", fromWorkload(func(w *Workload) float64 { return float64(w.GCCycles) }), func(s *Summary, v Float) { s.GCCycles = v }},
	{"gc_pause_p50_ms", fromWorkload(func(w *Workload) float64 { return float64(w.GCPause.P50) }), func(s *Summary, v Float) { s.GCPauseP50MS = v }},
	{"gc_pause_p99_ms", fromWorkload(func(w *Workload) float64 { return float64(w.GCPause.P99) }), func(s *Summary, v Float) { s.GCPauseP99MS = v }},
	{"gc_pause_max_ms", fromWorkload(func(w *Workload) float64 { return float64(w.GCPause.Max) }), func(s *Summary, v Float) { s.GCPauseMaxMS = v }},
	{"gc_cpu_fraction", fromWorkload(func(w *Workload) float64 { return float64(w.GCCPUFraction) }), func(s *Summary, v Float) { s.GCCPUFraction = v }},
	{"gc_cpu_seconds", fromWorkload(func(w *Workload) float64 { return w.GCCPUSeconds }), func(s *Summary, v Float) { s.GCCPUSeconds = v }},
	{"gc_cpu_noidle_seconds", fromWorkload(func(w *Workload) float64 { return w.GCCPUSeconds - w.GCIdleCPUSeconds }),
		func(s *Summary, v Float) { s.GCCPUNoIdleSeconds = v }},
	{"gc_share", fromWorkload(func(w *Workload) float64 { return ratio(w.GCCPUSeconds, w.UsedCPUSeconds) }), func(s *Summary, v Float) { s.GCShare = v }},
	{"gc_share_noidle", fromWorkload(func(w *Workload) float64 { return ratio(w.GCCPUSeconds-w.GCIdleCPUSeconds, w.UsedCPUSeconds) }),
		func(s *Summary, v Float) { s.GCShareNoIdle = v }},
	{"throttled_periods", func(r Run) float64 {
		if t := r.Throttling(); t != nil {
			return float64(t.ThrottledPeriods)
		}
		return math.NaN()
	}, func(s *Summary, v Float) { s.ThrottledPeriods = v }},
	{"memory_peak_bytes", func(r Run) float64 {
		if r.MemoryPeakBytes <= 0 {
			return math.NaN()
		}
		return float64(r.MemoryPeakBytes)
	}, func(s *Summary, v Float) { s.MemoryPeakBytes = v }},
	{"oom_captures", func(r Run) float64 {
		if r.OOMCaptures == nil {
			return math.NaN()
		}
		return float64(*r.OOMCaptures)
	}, func(s *Summary, v Float) { s.OOMCaptures = v }},
	{"sched_latency_p99_ms", fromWorkload(func(w *Workload) float64 { return float64(w.SchedLatency.P99) }), func(s *Summary, v Float) { s.SchedLatencyP99MS = v }},
	{"throttled_periods_ratio", func(r Run) float64 { return r.Throttling().ThrottledRatio() }, func(s *Summary, v Float) { s.ThrottledPeriodsRatio = v }},
	{"throttled_ms", func(r Run) float64 {
		if t := r.Throttling(); t != nil {
			return t.ThrottledMS
		}
		return math.NaN()
	}, func(s *Summary, v Float) { s.ThrottledMS = v }},
	{"cpu_pressure", func(r Run) float64 { return r.Stalls().CPUShare() }, func(s *Summary, v Float) { s.CPUPressure = v }},
	{"memory_pressure", func(r Run) float64 { return r.Stalls().MemoryShare() }, func(s *Summary, v Float) { s.MemoryPressure = v }},
	{"requests", requestsDone, func(s *Summary, v Float) { s.Requests = v }},
	{"requests_per_s", fromWorkload(func(w *Workload) float64 {
		if w.DurationMS <= 0 {
			return math.NaN()
		}
		return float64(w.Requests) / (w.DurationMS / 1000)
	}), func(s *Summary, v Float) { s.RequestsPerSec = v }},
	{"gogc", fromWorkload(func(w *Workload) float64 { return float64(w.GOGC) }), func(s *Summary, v Float) { s.GOGC = v }},
	{"heap_goal_max_bytes", fromWorkload(func(w *Workload) float64 {
		if w.HeapGoalMaxBytes <= 0 {
			return math.NaN()
		}
		return float64(w.HeapGoalMaxBytes)
	}), func(s *Summary, v Float) { s.HeapGoalMaxBytes = v }},
	{"gc_ceiling_bytes", fromPolicy(func(p *GCPolicy) float64 { return float64(p.CeilingBytes) }), func(s *Summary, v Float) { s.GCCeilingBytes = v }},
	{"gc_policy_gogc", fromPolicy(func(p *GCPolicy) float64 { return float64(p.GOGC) }), func(s *Summary, v Float) { s.GCPolicyGOGC = v }},
	{"burst_at_s", fromBurst(func(b *Burst) float64 { return b.AtMS / 1000 }), func(s *Summary, v Float) { s.BurstAtSeconds = v }},
	{"burst_gogc", fromBurst(func(b *Burst) float64 { return float64(b.GOGC) }), func(s *Summary, v Float) { s.BurstGOGC = v }},
	{"burst_heap_goal_bytes", fromBurst(func(b *Burst) float64 { return float64(b.HeapGoalBytes) }), func(s *Summary, v Float) { s.BurstHeapGoalBytes = v }},
	{"peak_rss_bytes", fromWorkload(func(w *Workload) float64 { return float64(w.PeakRSSBytes) }), func(s *Summary, v Float) { s.PeakRSSBytes = v }},
	{"limited_usage_bytes", func(r Run) float64 {
		if r.Sidecar == nil || r.Sidecar.LimitedUsageBytes <= 0 {
			return math.NaN() // the kind runner cannot read it
		}
		return float64(r.Sidecar.LimitedUsageBytes)
	}, func(s *Summary, v Float) { s.LimitedUsageBytes = v }},
	{"reached_s", fromLeak(func(l *LeakWindow) float64 { return l.ReachedMS / 1000 }), func(s *Summary, v Float) { s.ReachedSeconds = v }},
	{"window_s", fromLeak(func(l *LeakWindow) float64 { return (l.EndMS - l.ReachedMS) / 1000 }), func(s *Summary, v Float) { s.WindowSeconds = v }},
	{"window_gc_cpu_fraction", fromWindow(func(w *Window) float64 { return float64(w.GCCPUFraction) }), func(s *Summary, v Float) { s.WindowGCCPUFraction = v }},
	{"window_latency_p99_ms", fromWindow(func(w *Window) float64 { return float64(w.LatencyP99MS) }), func(s *Summary, v Float) { s.WindowLatencyP99MS = v }},
	{"window_requests", fromWindow(func(w *Window) float64 { return float64(w.Requests) }), func(s *Summary, v Float) { s.WindowRequests = v }},
	{"brownout_s", fromLeak(func(l *LeakWindow) float64 { return l.BrownoutMS / 1000 }), func(s *Summary, v Float) { s.BrownoutSeconds = v }},
	{"raised_s", fromLeak(func(l *LeakWindow) float64 {
		if l.RaisedMS <= 0 {
			return math.NaN()
		}
		return l.RaisedMS / 1000
	}), func(s *Summary, v Float) { s.RaisedSeconds = v }},
	{"cpu_seconds", func(r Run) float64 {
		if r.CPUSeconds <= 0 {
			return math.NaN()
		}
		return r.CPUSeconds
	}, func(s *Summary, v Float) { s.CPUSeconds = v }},
}

// fromPolicy reads fitgo's GC policy of a run where it was on; NaN for the
// others.
func fromPolicy(f func(*GCPolicy) float64) func(Run) float64 {
	return fromWorkload(func(w *Workload) float64 {
		if w.GCPolicy == nil || !w.GCPolicy.On {
			return math.NaN()
		}
		return f(w.GCPolicy)
	})
}

// fromBurst reads the burst of a run whose co-process was told to grow.
func fromBurst(f func(*Burst) float64) func(Run) float64 {
	return func(r Run) float64 {
		if r.Burst == nil {
			return math.NaN()
		}
		return f(r.Burst)
	}
}

// ratio is a / b, NaN when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return a / b
}

// gomemlimit returns the GOMEMLIMIT a run reported: in its result, or for a
// killed run in its last progress line.
func gomemlimit(r Run) (int64, bool) {
	switch {
	case r.Workload != nil:
		return r.Workload.GOMEMLIMIT, true
	case r.LastProgress != nil && r.LastProgress.GOMEMLIMIT != 0:
		return r.LastProgress.GOMEMLIMIT, true
	}
	return 0, false
}

// fromLeak reads the limit window of a run that reached GOMEMLIMIT; NaN for
// the others.
func fromLeak(f func(*LeakWindow) float64) func(Run) float64 {
	return func(r Run) float64 {
		if r.Leak == nil || r.Leak.ReachedMS <= 0 {
			return math.NaN()
		}
		return f(r.Leak)
	}
}

func fromWindow(f func(*Window) float64) func(Run) float64 {
	return fromLeak(func(l *LeakWindow) float64 {
		if l.Window == nil {
			return math.NaN()
		}
		return f(l.Window)
	})
}

// requestsDone is the requests a run completed: the result's count, or for a
// run without a result the count in its last progress line (0 if none): the
// work a killed run got done.
func requestsDone(r Run) float64 {
	switch {
	case r.Workload != nil:
		return float64(r.Workload.Requests)
	case r.LastProgress != nil:
		return float64(r.LastProgress.Requests)
	}
	return 0
}

func summarize(runs []Run) Summary {
	first := runs[0]
	s := Summary{
		Scenario:     first.Scenario,
		Variant:      first.Variant,
		CPUs:         first.CPUs,
		MemoryBytes:  first.MemoryBytes,
		Load:         first.Load,
		Layout:       first.Layout,
		SidecarBytes: first.SidecarBytes,
		WorkloadName: first.WorkloadName,
		BurstBytes:   first.BurstBytes,
		Runs:         len(runs),
		Range:        map[string][2]Float{},
	}
	for _, r := range runs {
		if r.Workload != nil {
			s.CompletedRuns++
		}
		s.OOMKills += r.OOMKills
		s.MaxHostLoad = max(s.MaxHostLoad, r.HostLoad)
		if r.Busy {
			s.BusyRuns++
		}
		if r.Workload == nil && !r.Killed() {
			s.FailedRuns++
		}
		if _, ok := gomemlimit(r); ok {
			s.GOMEMLIMITRuns++
		}
		if r.Sidecar != nil && r.Sidecar.OOMKilled {
			s.SidecarOOMKills++
		}
		if r.Burst != nil && r.Burst.Grown {
			s.BurstsGrown++
		}
		if w := r.Workload; w != nil && w.GCPolicy != nil && w.GCPolicy.On && w.GCPolicy.Reason != "" && !slices.Contains(s.GCReasons, w.GCPolicy.Reason) {
			s.GCReasons = append(s.GCReasons, w.GCPolicy.Reason)
		}
		for k, v := range r.MemoryEvents {
			if s.MemoryEvents == nil {
				s.MemoryEvents = map[string]uint64{}
			}
			s.MemoryEvents[k] += v
		}
	}
	vals := make([]float64, len(runs))
	for _, m := range metrics {
		for i, r := range runs {
			vals[i] = m.get(r)
		}
		sum := stats.Summarize(vals)
		m.set(&s, Float(sum.Median))
		if sum.N > 0 {
			s.Range[m.key] = [2]Float{Float(sum.Min), Float(sum.Max)}
		}
	}
	return s
}

// SortSettings returns the distinct settings of the summaries, sorted by
// scenario, load, burst (none first), workload, CPUs and memory.
func SortSettings(sums []Summary) []Setting {
	var out []Setting
	for _, s := range sums {
		if !slices.Contains(out, s.Setting()) {
			out = append(out, s.Setting())
		}
	}
	slices.SortStableFunc(out, func(a, b Setting) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Load, b.Load), cmp.Compare(a.BurstBytes, b.BurstBytes), cmp.Compare(a.WorkloadName, b.WorkloadName),
			cmp.Compare(a.CPUs, b.CPUs), cmp.Compare(a.MemoryBytes, b.MemoryBytes), cmp.Compare(a.SidecarBytes, b.SidecarBytes), cmp.Compare(a.Layout, b.Layout))
	})
	return out
}

// Package results defines what the benchmark measures and how runs are
// summarised: the workload's JSON output (Workload, Progress), one run of one
// variant as a runner saw it (Run), and the per-variant medians written to
// results.json (Summary). The local and kind runners share these types and the
// report package's writers.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Line types of the workload's JSON output.
const (
	TypeResult   = "result"   // the single object printed on stdout at the end
	TypeProgress = "progress" // the periodic lines printed on stderr with -report-every
	TypeSidecar  = "sidecar"  // the lines of the shared scenario's sidecar (bench/cmd/sidecar)
)

// SidecarLine is a line the sidecar prints on stdout: State "held" once it
// holds HeldBytes resident, "freed" after it returned them, "grown" once it
// holds HeldBytes after a burst (-grow-mib), which took GrowMS. State "killed" is
// printed by the co-process launcher (bench/cmd/coprocess) when the sidecar
// it runs was killed by a SIGKILL it did not send: the OOM killer's.
type SidecarLine struct {
	Type      string  `json:"type"` // TypeSidecar
	State     string  `json:"state"`
	HeldBytes int64   `json:"held_bytes"`
	RSSBytes  int64   `json:"rss_bytes"`
	GrowMS    float64 `json:"grow_ms,omitempty"`
}

// SidecarKilled is the State of the line that says the sidecar was killed;
// SidecarGrown of the line that says it grew by its burst.
const (
	SidecarKilled = "killed"
	SidecarGrown  = "grown"
)

// ParseSidecarLine decodes a line of the sidecar's output.
func ParseSidecarLine(b []byte) (SidecarLine, error) {
	var l SidecarLine
	if err := json.Unmarshal(bytes.TrimSpace(b), &l); err != nil {
		return l, fmt.Errorf("not a sidecar line: %w", err)
	}
	if l.Type != TypeSidecar || (l.State != "held" && l.State != "freed" && l.State != SidecarGrown && l.State != SidecarKilled) {
		return l, fmt.Errorf("not a sidecar line: type %q, state %q", l.Type, l.State)
	}
	return l, nil
}

// Workload is the JSON object the workload prints on stdout when it finishes.
// Durations are in milliseconds, sizes in bytes.
type Workload struct {
	Type    string `json:"type"` // TypeResult
	Variant string `json:"variant"`
	// GoVersion is runtime.Version() of the workload binary.
	GoVersion string `json:"go_version"`
	// GOMAXPROCS and GOMEMLIMIT in force at the end of the run; GOMEMLIMIT is
	// math.MaxInt64 when there is none. The *Start fields are the values when
	// measurement began (after init and the heap build).
	GOMAXPROCS      int   `json:"gomaxprocs"`
	GOMEMLIMIT      int64 `json:"gomemlimit"`
	GOMAXPROCSStart int   `json:"gomaxprocs_start"`
	GOMEMLIMITStart int64 `json:"gomemlimit_start"`

	Config Config `json:"config"`

	// DurationMS is the measured window: from the first scheduled request to the
	// completion of the last one.
	DurationMS float64 `json:"duration_ms"`
	// SetupMS is the time from process start to the start of measurement
	// (building the live heap, and the warm-up); WarmupMS the warm-up's part.
	SetupMS  float64 `json:"setup_ms"`
	WarmupMS float64 `json:"warmup_ms,omitempty"`

	// Requests is the number of requests completed; RequestsScheduled the number
	// whose scheduled time fell in the window (all of them complete unless the
	// process is stuck past the drain timeout).
	Requests          uint64 `json:"requests"`
	RequestsScheduled uint64 `json:"requests_scheduled"`
	// Latency of the requests, from the scheduled time to completion.
	Latency Percentiles `json:"latency_ms"`

	// GCCycles completed in the window; GCPause is the distribution of GC
	// stop-the-world pauses (/sched/pauses/total/gc:seconds) in the window.
	GCCycles uint64      `json:"gc_cycles"`
	GCPause  Percentiles `json:"gc_pause_ms"`
	// GCPauseTotalMS is the sum of the pauses, estimated from the histogram's
	// bucket midpoints.
	GCPauseTotalMS float64 `json:"gc_pause_total_ms"`
	// SchedLatency is the distribution of the time goroutines spent runnable
	// before running (/sched/latencies:seconds) in the window.
	SchedLatency Percentiles `json:"sched_latency_ms"`
	// GCCPUFraction is /cpu/classes/gc/total:cpu-seconds over
	// /cpu/classes/total:cpu-seconds in the window. The denominator is GOMAXPROCS
	// integrated over wall time, idle included. The runtime updates these
	// estimates at the end of each GC cycle, so the fraction covers the cycles
	// completed in the window; NaN (null) when none completed.
	GCCPUFraction Float   `json:"gc_cpu_fraction"`
	GCCPUSeconds  float64 `json:"gc_cpu_seconds"`
	// GCIdleCPUSeconds is the part of GCCPUSeconds spent marking on idle Ps
	// (/cpu/classes/gc/mark/idle), which burns a CPU quota too;
	// UsedCPUSeconds is /cpu/classes/total less /cpu/classes/idle: the CPU
	// the process used in the window, by the runtime's estimate.
	GCIdleCPUSeconds float64 `json:"gc_idle_cpu_seconds"`
	UsedCPUSeconds   float64 `json:"used_cpu_seconds"`

	// PeakRSSBytes is VmHWM of the process.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// HeapLiveBytes is /gc/heap/live:bytes at the end.
	HeapLiveBytes int64 `json:"heap_live_bytes"`
	// GOGC is /gc/gogc:percent at the end of the window, -1 for off;
	// HeapGoalMaxBytes the largest /gc/heap/goal:bytes seen in the window
	// (sampled every 10 ms).
	GOGC             int   `json:"gogc"`
	HeapGoalMaxBytes int64 `json:"heap_goal_max_bytes"`
	// GCPolicy is the fitting library's GC policy as the workload read it at
	// the end of the window; nil for the variants without one.
	GCPolicy *GCPolicy `json:"gc_policy,omitempty"`

	// CPUStat is the delta of cpu.stat of the process's effective CPU cgroup over
	// the window, read with fitgo's cgroup package; nil when it could not be read
	// (CPUStatError says why).
	CPUStat      *CPUStat `json:"cpu_stat,omitempty"`
	CPUStatError string   `json:"cpu_stat_error,omitempty"`
	// Pressure is the change of the pressure totals of the process's cgroup
	// over the window; nil where the kernel has none for it (cgroup v1).
	Pressure *Pressure `json:"pressure,omitempty"`
}

// GCPolicy is fitgo's GC policy (memlimit.Result.GC from Status): On when
// asked for, GOGC the value in force, Base the program's, CeilingBytes the
// heap it aims at (0: none) and Reason why.
type GCPolicy struct {
	On           bool   `json:"on"`
	GOGC         int    `json:"gogc"`
	Base         int    `json:"base"`
	CeilingBytes int64  `json:"ceiling_bytes"`
	Reason       string `json:"reason,omitempty"`
}

// Config is the workload's configuration, echoed in its output.
type Config struct {
	HeapMiB         float64 `json:"heap_mib"`
	AllocMiBPerSec  float64 `json:"alloc_mib_per_s"`
	RequestsPerSec  float64 `json:"requests_per_s"`
	WorkIterations  int     `json:"work_iterations"`
	WorkMicros      float64 `json:"work_us"` // the target the iterations were calibrated for
	DurationSeconds float64 `json:"duration_s"`
	WarmupSeconds   float64 `json:"warmup_s,omitempty"`
	// Ticker is how the request generator woke up: "netpoll" or "sleep".
	Ticker string `json:"ticker"`
}

// Percentiles of a latency distribution, in milliseconds; NaN (null in JSON)
// when there were no samples (e.g. no GC pause in a short window).
type Percentiles struct {
	P50  Float `json:"p50"`
	P99  Float `json:"p99"`
	P999 Float `json:"p999"`
	Max  Float `json:"max"`
}

// CPUStat is a cpu.stat delta.
type CPUStat struct {
	Periods          uint64  `json:"periods"`
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledMS      float64 `json:"throttled_ms"`
}

// ThrottledRatio returns ThrottledPeriods/Periods, or NaN without periods.
func (s *CPUStat) ThrottledRatio() float64 {
	if s == nil || s.Periods == 0 {
		return math.NaN()
	}
	return float64(s.ThrottledPeriods) / float64(s.Periods)
}

// Progress is a line the workload prints on stderr every -report-every interval.
type Progress struct {
	Type      string  `json:"type"` // TypeProgress
	Variant   string  `json:"variant"`
	ElapsedMS float64 `json:"elapsed_ms"` // since process start
	// Phase is "setup" while the live heap is built, "warmup" during the
	// warm-up, then "run"; PhaseMS is the time since the phase began.
	Phase      string  `json:"phase"`
	PhaseMS    float64 `json:"phase_ms,omitempty"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	GOMEMLIMIT int64   `json:"gomemlimit"`
	// Requests completed so far in the run phase.
	Requests      uint64 `json:"requests"`
	GCCycles      uint64 `json:"gc_cycles"` // since process start
	HeapLiveBytes int64  `json:"heap_live_bytes"`
	RSSBytes      int64  `json:"rss_bytes"`
	// HeapGoalBytes is /gc/heap/goal:bytes; GCCPUSeconds and CPUSeconds are
	// /cpu/classes/gc/total:cpu-seconds and /cpu/classes/total:cpu-seconds
	// since process start (updated by the runtime at the end of each GC cycle).
	HeapGoalBytes int64   `json:"heap_goal_bytes,omitempty"`
	GOGC          int     `json:"gogc,omitempty"`
	GCCPUSeconds  float64 `json:"gc_cpu_seconds,omitempty"`
	CPUSeconds    float64 `json:"cpu_seconds,omitempty"`
	// LimitBound is true when GOMEMLIMIT, not GOGC, set the heap goal at this
	// line: the goal is below what GOGC alone would give. The first such line
	// starts the limit window.
	LimitBound bool `json:"limit_bound,omitempty"`
	// Window holds the figures since the first LimitBound line, nil before it.
	Window *Window `json:"window,omitempty"`
}

// Window is what a process did while its heap was held at GOMEMLIMIT: from
// the first progress line whose heap goal GOMEMLIMIT set, to this line.
type Window struct {
	// StartMS is the process's age at the start of the window.
	StartMS float64 `json:"start_ms"`
	// Requests completed in the window, their latency p99 (from each
	// request's scheduled time; an upper bound within 5 %), and the GC's
	// share of the CPU in the window.
	Requests      uint64 `json:"requests"`
	LatencyP99MS  Float  `json:"latency_p99_ms"`
	GCCPUFraction Float  `json:"gc_cpu_fraction"`
}

// Line is one line of workload output: a Progress or a Workload result.
type Line struct {
	Progress *Progress
	Result   *Workload
}

// ParseLine decodes one line of workload output. It returns an error for a line
// that is not a JSON object with a known "type".
func ParseLine(b []byte) (Line, error) {
	b = bytes.TrimSpace(b)
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Line{}, fmt.Errorf("not a workload line: %w", err)
	}
	switch head.Type {
	case TypeResult:
		var w Workload
		if err := json.Unmarshal(b, &w); err != nil {
			return Line{}, err
		}
		return Line{Result: &w}, nil
	case TypeProgress:
		var p Progress
		if err := json.Unmarshal(b, &p); err != nil {
			return Line{}, err
		}
		return Line{Progress: &p}, nil
	}
	return Line{}, fmt.Errorf("unknown workload line type %q", head.Type)
}

// ErrNoResult is returned by ParseOutput when the output holds no result line.
var ErrNoResult = errors.New("no result line in workload output")

// ParseOutput scans workload output (stdout, stderr or both interleaved, as in
// pod logs) for JSON lines. It returns the last result and the last progress
// line; lines that are not workload JSON are ignored. err is ErrNoResult when
// there is no result line.
func ParseOutput(out []byte) (res *Workload, last *Progress, err error) {
	for _, l := range bytes.Split(out, []byte("\n")) {
		if i := bytes.IndexByte(l, '{'); i > 0 {
			l = l[i:] // tolerate a timestamp prefix (kubectl logs --timestamps)
		}
		line, perr := ParseLine(l)
		if perr != nil {
			continue
		}
		if line.Result != nil {
			res = line.Result
		}
		if line.Progress != nil {
			last = line.Progress
		}
	}
	if res == nil {
		return nil, last, ErrNoResult
	}
	return res, last, nil
}

// Run is one run of one variant in one scenario setting, as a runner saw it.
type Run struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	// CPUs is the CPU quota in cores (0: none); MemoryBytes the memory limit (0: none).
	CPUs        float64 `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	// Load is the request work as a fraction of the CPU quota (0: the fixed
	// work per request of the workload's config).
	Load float64 `json:"load,omitempty"`
	// Layout and SidecarBytes describe the shared scenario: where the sidecar
	// that shares the memory limit runs ("sibling" or "coprocess") and the
	// memory it holds.
	Layout       string `json:"layout,omitempty"`
	SidecarBytes int64  `json:"sidecar_bytes,omitempty"`
	// WorkloadName names the gc scenario's workloads (e.g. "heavy (100 MiB
	// live, 100 MiB/s)"); BurstBytes is its burst case's growth of a
	// co-process in the limited cgroup (0: none).
	WorkloadName string `json:"workload_name,omitempty"`
	BurstBytes   int64  `json:"burst_bytes,omitempty"`
	// Round is the 1-based round of the interleaved schedule.
	Round int `json:"round"`

	// Workload is the workload's result, nil when it printed none (killed, crashed).
	Workload *Workload `json:"workload,omitempty"`
	// LastProgress is the last progress line seen, if any: it tells how far a
	// killed run got.
	LastProgress *Progress `json:"last_progress,omitempty"`

	// ExitCode is the process's exit status (-1 when killed by a signal, whose
	// name is then in Signal).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// OOMKills is the number of OOM kills in the run's cgroup (memory.events
	// oom_kill on v2, memory.oom_control oom_kill on v1; in Kubernetes the
	// container's OOMKilled termination reason).
	OOMKills uint64 `json:"oom_kills"`
	// MemoryEvents are the counters of the cgroup that carries the memory
	// limit at the end of the run: v2 memory.events (low, high, max, oom,
	// oom_kill, ...); v1 failcnt (memory.failcnt), memsw_failcnt
	// (memory.memsw.failcnt, where swap is accounted), oom_kill and under_oom
	// (memory.oom_control). On v1 oom_kill counts only kills of processes in
	// that very cgroup, not in its children (the sibling layout), unlike v2.
	MemoryEvents map[string]uint64 `json:"memory_events,omitempty"`
	// MemoryPeakBytes is the limited cgroup's peak usage (v1
	// memory.max_usage_in_bytes, v2 memory.peak where the kernel has it).
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty"`
	// Sidecar is what the runner saw of the shared scenario's sidecar, or
	// of the gc scenario's burst co-process.
	Sidecar *Sidecar `json:"sidecar,omitempty"`
	// Burst is what the runner saw of the burst (BurstBytes > 0).
	Burst *Burst `json:"burst,omitempty"`
	// OOMCaptures is the number of OOM captures (breakdowns) the variant
	// with FITGO=oomprofile left in its directory; nil for the others.
	OOMCaptures *int `json:"oom_captures,omitempty"`
	// Leak is the limit window of the leak scenario (and of any run whose
	// heap reached GOMEMLIMIT), from the workload's progress lines.
	Leak *LeakWindow `json:"leak,omitempty"`
	// CPUStat is the runner's cpu.stat delta of the quota cgroup over the whole
	// process lifetime (setup included); nil when not read.
	CPUStat *CPUStat `json:"cpu_stat,omitempty"`
	// Pressure is the runner's change of the pressure totals of the quota
	// cgroup over the process lifetime; nil where there are none (cgroup v1).
	Pressure *Pressure `json:"pressure,omitempty"`
	// CPUSeconds is the process's user+system CPU time.
	CPUSeconds float64 `json:"cpu_seconds"`
	// WallSeconds is the process's wall time.
	WallSeconds float64 `json:"wall_seconds"`
	// HostLoad is the host's 1-minute load average when the run ended (local
	// runner; 0 when unknown): runs on a busy host are noisy.
	HostLoad float64 `json:"host_load,omitempty"`
	// Busy is true when other processes competed with the run for the CPUs:
	// the host load less the run's own CPU use was above half the CPUs.
	Busy bool `json:"busy,omitempty"`
	// Err describes a failure of the run other than an OOM kill.
	Err string `json:"error,omitempty"`
}

// Sidecar is the shared scenario's other process, as the runner saw it.
type Sidecar struct {
	// RSSBytes is the sidecar's resident memory once it held its share.
	RSSBytes int64 `json:"rss_bytes"`
	// LimitedUsageBytes is the usage of the cgroup that carries the limit with
	// the sidecar ready and before the workload started: it includes the
	// sidecar when the limit accounts for it (hierarchically in the sibling
	// layout); 0 where the runner cannot read it (kind).
	LimitedUsageBytes int64 `json:"limited_usage_bytes"`
	// OOMKilled is true when the sidecar, not the workload, was killed.
	OOMKilled bool `json:"oom_killed,omitempty"`
}

// Burst is the gc scenario's burst as the runner saw it: the co-process was
// told to grow at the workload's window age AtMS, when its last progress line
// said GOGC and HeapGoalBytes; it held the burst after GrowMS (Grown false:
// it never said so, killed first or the run ended).
type Burst struct {
	AtMS          float64 `json:"at_ms"`
	GOGC          int     `json:"gogc"`
	HeapGoalBytes int64   `json:"heap_goal_bytes"`
	Grown         bool    `json:"grown"`
	GrowMS        float64 `json:"grow_ms,omitempty"`
}

// LeakWindow is a run's time at GOMEMLIMIT, from its progress lines.
type LeakWindow struct {
	// ReachedMS is the process's age when GOMEMLIMIT first set the heap goal
	// (0: it never did).
	ReachedMS float64 `json:"reached_ms"`
	// EndMS is the process's age at its end (the kill, or the end of the run).
	EndMS float64 `json:"end_ms"`
	// Window is the workload's window figures in its last progress line
	// (at most one reporting interval before the end).
	Window *Window `json:"window,omitempty"`
	// BrownoutMS is the time in the window spent in reporting intervals
	// where the GC took more than half of the CPU.
	BrownoutMS float64 `json:"brownout_ms"`
	// RaisedMS is the process's age at the first progress line whose
	// GOMEMLIMIT is above the first line's (a leak guard raised it); 0: none.
	RaisedMS float64 `json:"raised_ms,omitempty"`
}

// Killed reports whether the run ended by an OOM kill.
func (r Run) Killed() bool { return r.OOMKills > 0 }

// Throttling returns the cpu.stat delta that best describes the run: the
// workload's own measurement window when it has one, else the runner's.
func (r Run) Throttling() *CPUStat {
	if r.Workload != nil && r.Workload.CPUStat != nil {
		return r.Workload.CPUStat
	}
	return r.CPUStat
}

// Stalls returns the pressure change that best describes the run: the
// workload's own measurement window when it has one, else the runner's.
func (r Run) Stalls() *Pressure {
	if r.Workload != nil && r.Workload.Pressure != nil {
		return r.Workload.Pressure
	}
	return r.Pressure
}

// Float is a float64 that encodes NaN (no measurement) as JSON null.
type Float float64

// MarshalJSON encodes NaN and infinities as null.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON decodes null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

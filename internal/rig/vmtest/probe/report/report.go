// Package report is the wire format of the vm tests' probes: each probe prints
// one line "FITGO-RESULT {json}" per result on standard output, where the
// guest's console carries it to the test, which decodes it with the same types.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// Header names the scenario and the probe of a result. Every result embeds it.
type Header struct {
	Scenario string `json:"scenario"`
	Probe    string `json:"probe"`
}

// Emit prints v, a struct embedding Header, as one FITGO-RESULT line with a
// single write, so that lines of concurrent probes do not mix.
func Emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		Fail(fmt.Sprintf("marshal %T: %v", v, err))
	}
	os.Stdout.Write(append(append([]byte("FITGO-RESULT "), b...), '\n'))
}

// Fail prints a FITGO-ERROR line, which fails the test, and exits.
func Fail(msg string) {
	fmt.Printf("FITGO-ERROR %s: %s\n", os.Args[0], msg)
	os.Exit(1)
}

// Limits is cgroup.Limits with its errors as text (an error value does not
// survive encoding/json).
type Limits struct {
	cgroup.Limits
	CPUErr    string `json:"cpu_err,omitempty"`
	MemoryErr string `json:"memory_err,omitempty"`
	Err       string `json:"err,omitempty"` // the error returned with the limits
}

// NewLimits converts what cgroup.Read returned.
func NewLimits(l cgroup.Limits, err error) Limits {
	r := Limits{Limits: l, CPUErr: errText(l.CPU.Err), MemoryErr: errText(l.Memory.Err), Err: errText(err)}
	r.Limits.CPU.Err, r.Limits.Memory.Err = nil, nil
	return r
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Runtime is the state of the Go runtime's two knobs.
type Runtime struct {
	GOMAXPROCS int   `json:"gomaxprocs"`
	GOMEMLIMIT int64 `json:"gomemlimit"` // math.MaxInt64 means no limit
	NumCPU     int   `json:"numcpu"`
}

// ReadRuntime returns the current GOMAXPROCS and memory limit without changing them.
func ReadRuntime() Runtime {
	return Runtime{GOMAXPROCS: runtime.GOMAXPROCS(0), GOMEMLIMIT: debug.SetMemoryLimit(-1), NumCPU: runtime.NumCPU()}
}

// Read is what "explicit read" prints: cgroup.Read's result.
type Read struct {
	Header
	Limits  Limits  `json:"limits"`
	Runtime Runtime `json:"runtime"`
}

// Burn is what "explicit burn" prints: how cpu.stat of the effective CPU
// cgroup (cgroup.Watcher.Stats) changed while the probe kept Threads
// goroutines spinning.
type Burn struct {
	Header
	Limits  Limits  `json:"limits"`
	Runtime Runtime `json:"runtime"`
	Threads int     `json:"threads"`
	// Wall is the time between the two cpu.stat readings.
	Wall   time.Duration `json:"wall_ns"`
	Before CPU           `json:"before"`
	After  CPU           `json:"after"`
	Delta  CPU           `json:"delta"`
	// Stats is the whole last reading: memory and pressure too.
	Stats cgroup.Stats `json:"stats"`
	// RawBefore and RawAfter hold cpu.stat and, where it exists,
	// cpuacct.usage of the limiting cgroup (Limits.CPU.Source), read right
	// before and right after After.
	RawBefore map[string]string `json:"raw_before"`
	RawAfter  map[string]string `json:"raw_after"`
}

// CPU holds the counters of cgroup.Stats.CPU that the tests check.
type CPU struct {
	Periods, ThrottledPeriods uint64
	ThrottledTime, Usage      time.Duration
	HasUsage                  bool
}

// NewCPU returns the counters of s.
func NewCPU(s cgroup.Stats) CPU {
	return CPU{s.CPU.Periods, s.CPU.ThrottledPeriods, s.CPU.ThrottledTime, s.CPU.Usage, s.CPU.HasUsage}
}

// Sub returns c - prev field by field (the counters only grow).
func (c CPU) Sub(prev CPU) CPU {
	return CPU{c.Periods - prev.Periods, c.ThrottledPeriods - prev.ThrottledPeriods,
		c.ThrottledTime - prev.ThrottledTime, c.Usage - prev.Usage, c.HasUsage && prev.HasUsage}
}

// Prom is what the fitgoprom probe prints: the samples a pedantic registry
// with fitgoprom.NewCollector gathered after Threads goroutines spun for
// Wall, keyed by name and labels in the text format's order, e.g.
// `fitgo_pressure_stalled_seconds_total{kind="some",resource="cpu"}`.
type Prom struct {
	Header
	Threads   int                `json:"threads"`
	Wall      time.Duration      `json:"wall_ns"`
	Samples   map[string]float64 `json:"samples"`
	GatherErr string             `json:"gather_err,omitempty"`
}

// MaxProcs is maxprocs.Result, with its error and policy as text.
type MaxProcs struct {
	Before, After int
	Changed       bool
	Limit         float64
	Source        string
	NumCPU        int
	Policy        maxprocs.Policy
	Env           string
	Runtime       GoRuntime
	Reason        string
	Err           string
	Refresh       time.Duration
}

// GoRuntime is what the Go runtime does about GOMAXPROCS by itself.
type GoRuntime struct {
	ContainerAware, Updates bool
	Why                     string
}

// NewMaxProcs converts a maxprocs.Result.
func NewMaxProcs(r maxprocs.Result) MaxProcs {
	return MaxProcs{
		Before: r.Before, After: r.After, Changed: r.Changed, Limit: r.Limit, Source: r.Source,
		NumCPU: r.NumCPU, Policy: r.Policy, Env: r.Env,
		Runtime: GoRuntime{ContainerAware: r.RuntimeAware, Updates: r.RuntimeUpdates, Why: r.Runtime},
		Reason:  r.Reason, Err: errText(r.Err), Refresh: r.Refresh,
	}
}

// MaxProcsStatus is the live part of maxprocs.Fit.Status, with its error as
// text.
type MaxProcsStatus struct {
	GOMAXPROCS int
	Following  bool
	Updates    int
	LastUpdate time.Time
	Limit      float64
	Source     string
	Err        string
	Reason     string
}

// NewMaxProcsStatus converts a maxprocs.Fit.Status.
func NewMaxProcsStatus(s maxprocs.Result) MaxProcsStatus {
	return MaxProcsStatus{
		GOMAXPROCS: s.After, Following: s.Following, Updates: s.Updates, LastUpdate: s.LastUpdate,
		Limit: s.Limit, Source: s.Source, Err: errText(s.Err), Reason: s.Reason,
	}
}

// MemLimit is memlimit.Result, with its error and policy as text.
type MemLimit struct {
	Before, After int64
	Changed       bool
	Limit         int64
	Source        string
	From          string
	Others        int64 // held by the others at Source when the headroom bound the value
	LevelLimit    int64
	Policy        memlimit.Policy
	Env           string
	Reason        string
	Err           string
	Refresh       time.Duration
}

// NewMemLimit converts a memlimit.Result.
func NewMemLimit(r memlimit.Result) MemLimit {
	return MemLimit{
		Before: r.Before, After: r.After, Changed: r.Changed, Limit: r.Limit, Source: r.Source,
		From: r.From, Others: r.Others, LevelLimit: r.LevelLimit, Policy: r.Policy, Env: r.Env, Reason: r.Reason,
		Err: errText(r.Err), Refresh: r.Refresh,
	}
}

// MemLimitStatus is the live part of memlimit.Fit.Status, with its error as
// text.
type MemLimitStatus struct {
	GOMEMLIMIT int64
	Following  bool
	Updates    int
	LastUpdate time.Time
	Limit      int64
	Source     string
	From       string
	Err        string
	Reason     string
	HasEvents  bool // the memory events at Source were read
}

// NewMemLimitStatus converts a memlimit.Fit.Status.
func NewMemLimitStatus(s memlimit.Result) MemLimitStatus {
	return MemLimitStatus{
		GOMEMLIMIT: s.After, Following: s.Following, Updates: s.Updates, LastUpdate: s.LastUpdate,
		Limit: s.Limit, Source: s.Source, From: s.From, Err: errText(s.Err), Reason: s.Reason, HasEvents: s.HasEvents,
	}
}

// Fitgo is what the blank import reports (fitgo.Startup), with the live
// status of its refresh loop.
type Fitgo struct {
	Setting        string
	SettingErr     string
	Err            string
	MaxProcs       MaxProcs
	MemLimit       MemLimit
	MaxProcsStatus MaxProcsStatus
	MemLimitStatus MemLimitStatus
}

// Ceil is what "explicit ceil" prints: maxprocs.Apply with the Ceil rounding.
type Ceil struct {
	Header
	MaxProcs MaxProcs `json:"maxprocs"`
	Runtime  Runtime  `json:"runtime"`
}

// Blank is what "blank report" prints.
type Blank struct {
	Header
	Runtime Runtime `json:"runtime"` // read first thing in main, after fitgo's init
	Fitgo   Fitgo   `json:"fitgo"`
	Limits  Limits  `json:"limits"`
}

// Sample is a state of the two knobs at a time.
type Sample struct {
	UnixNano   int64 `json:"unix_nano"`
	GOMAXPROCS int   `json:"gomaxprocs"`
	GOMEMLIMIT int64 `json:"gomemlimit"`
}

// Watch is what "blank watch" prints at its end: the knobs at start and
// every change seen while polling them, then fitgo's results and status.
type Watch struct {
	Header
	Poll    time.Duration `json:"poll_ns"`
	Samples []Sample      `json:"samples"` // the first, then one per change
	Fitgo   Fitgo         `json:"fitgo"`
}

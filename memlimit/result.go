package memlimit

import (
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
)

// Result is a snapshot of what Apply did, or what Plan would do, and of its
// refresh.
type Result struct {
	// Before is the runtime's memory limit before Apply, After the limit
	// after it or, from Fit.Status, now; math.MaxInt64 when there is none.
	// Changed: Apply called debug.SetMemoryLimit (Plan: would).
	Before, After int64
	Changed       bool
	// Limit is the memory left for this process, in bytes, that GOMEMLIMIT
	// was derived from; Source is where it is set: a cgroup directory,
	// "/proc/meminfo" or the setting ("" for none); From names it:
	// "memory.max", "memory.high", "memory.limit_in_bytes", "MemTotal",
	// "FITGO_MEMORY_LIMIT" or "UpperLimit". Status: of the last good reading.
	Limit        int64
	Source, From string
	file         limitFile // From
	// Others is the memory other processes hold under the same limit (a
	// sidecar under a pod-level limit, a child process) when that left this
	// process less than the limit: LevelLimit is the limit at Source, and
	// Limit = LevelLimit − Others what is left. Both 0 when no one else does.
	Others, LevelLimit int64
	// Reserve is what Options.Reserve took off: Limit is what is left.
	Reserve int64
	// NonGo is the process's own memory outside the Go runtime (see
	// Options.NoNonGo), part of Others when they bind the value; 0 when it
	// is not measured.
	NonGo int64
	// Floor, when not 0, is the GOMEMLIMIT held because the others leave so
	// little that the policy's value would keep the GC running back to back.
	Floor int64
	// LeakGuard, from Status: a heap that grows while the GC runs at
	// GOMEMLIMIT (Share of the CPU over Window readings) looks like a leak;
	// GOMEMLIMIT is raised Steps quarters of the way from Policy, the
	// policy's value, to Limit, so that it ends in an OOM kill, not a crawl.
	LeakGuard struct {
		Steps         int
		Policy, Limit int64
		Share         float64
		Window        int
	}
	// Events are the memory events counted at Source (cgroup.Stats), read
	// by Status and Plan; HasEvents is false when Source is not a cgroup
	// directory or its files cannot be read.
	Events    struct{ Low, High, Max, OOM, OOMKill, OOMGroupKill uint64 }
	HasEvents bool
	// Memory is the memory limit as read at Apply, with the hierarchy.
	Memory cgroup.Memory
	// Policy is the policy used, with its defaults filled in.
	Policy Policy
	// Env is the GOMEMLIMIT environment variable at start-up, "" when unset.
	Env string
	// GC is the GC policy (Options.GC), from Fit.Status: On when asked
	// for, GOGC the value in force now, Base the program's GOGC, below which
	// it never goes, Ceiling the most it lets the heap goal and the runtime's
	// other memory reach (0: none) and Reason why.
	GC struct {
		On         bool
		GOGC, Base int
		Ceiling    int64
		Reason     string
	}
	// OOMCapture is the OOM capture (Options.OOMProfile) as Apply found it:
	// its directory Dir ("": off), Err why it is off although asked for, and
	// Previous, the breakdown of the newest capture an earlier process wrote
	// there ("": none), written At: after an OOM kill, the evidence. From
	// Status, Written counts the captures this Apply has written.
	OOMCapture struct {
		Dir, Previous string
		At            time.Time
		Err           error
		Written       int
	}
	// SettingErr is why FITGO_MEMORY_LIMIT (or UpperLimit) or Reserve was
	// ignored: not a quantity of at least 1 MiB, or one that leaves less than
	// the policy's Min; the limit is fitted as if it were unset. It also warns
	// of a FITGO_MEMORY_LIMIT in bytes below the limit read (kept: a
	// downward-API divisor other than 1 gives one), and has OOMCapture.Err.
	SettingErr error
	// Reason says why the memory limit was left alone ("" when Changed) or,
	// from Fit.Status, why it is not being fitted.
	Reason string
	// Err is why the memory limit could not be read or the options are
	// invalid (Apply returns it too), or, from Fit.Status, the last
	// reading's error.
	Err error
	// Refresh is the refresh interval, 0 for none; Following: fitgo still
	// follows the limit; Updates counts the refresh's changes, the last at
	// LastUpdate.
	Refresh    time.Duration
	Following  bool
	Updates    int
	LastUpdate time.Time
}

// setLimit sets the fields of r that describe the limit l.
func (r *Result) setLimit(l memLimit) {
	r.Limit, r.Source, r.From, r.file, r.LeakGuard = l.bytes, l.source, l.from.String(), l.from, l.guard
	r.Others, r.LevelLimit, r.Floor, r.Reserve, r.NonGo = l.others, l.level, l.floor, l.reserve, l.nonGo
}

// outcome is the part of r that the knob fills in; set puts it in r.
func (r *Result) outcome() knob.Outcome[int64] {
	return knob.Outcome[int64]{Before: r.Before, After: r.After, Changed: r.Changed, Following: r.Following, Reason: r.Reason,
		Err: r.Err, SettingErr: r.SettingErr, Refresh: r.Refresh, Updates: r.Updates, LastUpdate: r.LastUpdate}
}

func (r *Result) set(o knob.Outcome[int64]) {
	r.Before, r.After, r.Changed, r.Following, r.Reason, r.Err = o.Before, o.After, o.Changed, o.Following, o.Reason, o.Err
	r.Refresh, r.Updates, r.LastUpdate = o.Refresh, o.Updates, o.LastUpdate // SettingErr is the package's
}

// String summarises the result in one line.
func (r Result) String() string {
	lim := ""
	if r.Source != "" {
		lim = r.From + " " + formatBytes(r.Limit) + " from " + r.Source
	}
	if r.Reserve > 0 {
		lim = "available " + formatBytes(r.Limit) + " = " + r.From + " " + formatBytes(r.Limit+r.Reserve) + " from " + r.Source
	}
	if r.Others > 0 {
		lim = "available " + formatBytes(r.Limit) + " = " + r.From + " " + formatBytes(r.LevelLimit) + " − others " +
			formatBytes(r.Others) + " at " + r.Source
	}
	if r.NonGo > 0 {
		lim += " (own memory outside Go " + formatBytes(r.NonGo) + ")"
	}
	if r.Reserve > 0 {
		lim += " − reserve " + formatBytes(r.Reserve)
	}
	if r.Floor > 0 {
		lim += " (held at the floor " + formatBytes(r.Floor) + ")"
	}
	if g := r.LeakGuard; g.Steps > 0 {
		lim += "; raised by the leak guard (step " + strconv.Itoa(g.Steps) + " of " + strconv.Itoa(guardSteps) + " toward " +
			formatBytes(g.Limit) + "): the GC took " + strconv.Itoa(int(math.Round(g.Share*100))) + " % of the CPU over " +
			strconv.Itoa(g.Window) + " readings while the heap grew at GOMEMLIMIT"
	}
	sep := "; memory events at " + r.Source + ":"
	for _, a := range r.eventCounts() {
		lim += sep + " " + a.Key + " " + strconv.FormatUint(a.Value.Uint64(), 10)
		sep = ","
	}
	if r.OOMCapture.Previous != "" {
		lim += "; " + r.previousCapture()
	}
	policy := r.Policy.String()
	if r.GC.On {
		policy += "; GC policy: GOGC " + strconv.Itoa(r.GC.GOGC)
		if r.GC.Ceiling > 0 {
			policy += " (heap ceiling " + formatBytes(r.GC.Ceiling) + ")"
		}
		policy += ": " + r.GC.Reason
	}
	return processKnob.Summary(r.outcome(), lim, policy)
}

// LogValue makes a Result log as a group of its main fields.
func (r Result) LogValue() slog.Value {
	var lim []slog.Attr
	if r.Source != "" {
		lim = []slog.Attr{slog.Any("memory_limit", logBytes(r.Limit)), slog.String("source", r.Source), slog.String("from", r.From)}
	}
	if r.Others > 0 {
		lim = append(lim, slog.Any("level_limit", logBytes(r.LevelLimit)), slog.Any("others", logBytes(r.Others)))
	}
	if r.NonGo > 0 {
		lim = append(lim, slog.Any("non_go", logBytes(r.NonGo)))
	}
	if r.Reserve > 0 {
		lim = append(lim, slog.Any("reserve", logBytes(r.Reserve)))
	}
	if r.Floor > 0 {
		lim = append(lim, slog.Any("floor", logBytes(r.Floor)))
	}
	if r.LeakGuard.Steps > 0 {
		lim = append(lim, slog.Attr{Key: "leak_guard", Value: guardValue(r.LeakGuard)})
	}
	if ev := r.eventCounts(); len(ev) > 0 {
		lim = append(lim, slog.Attr{Key: "memory_events", Value: slog.GroupValue(ev...)})
	}
	if r.OOMCapture.Previous != "" {
		lim = append(lim, slog.String("oom_capture", r.previousCapture()))
	}
	lim = append(lim, slog.String("policy", r.Policy.String()))
	if r.GC.On {
		lim = append(lim, slog.Group("gc", slog.Int("gogc", r.GC.GOGC), slog.Int("base", r.GC.Base),
			slog.Any("heap_ceiling", logBytes(r.GC.Ceiling)), slog.String("reason", r.GC.Reason)))
	}
	return processKnob.LogValue(r.outcome(), lim...)
}

func (r Result) previousCapture() string {
	return "the previous process wrote an OOM capture at " + r.OOMCapture.At.UTC().Format(time.RFC3339) + ": " + r.OOMCapture.Previous
}

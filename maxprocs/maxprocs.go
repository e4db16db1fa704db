package maxprocs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
)

// Options configure Apply and Plan. The zero value of every field means the
// default.
type Options struct {
	// Policy turns the CPU limit into GOMAXPROCS.
	Policy
	// KeepExisting leaves GOMAXPROCS alone when the program or a library has
	// called runtime.GOMAXPROCS (it is no longer the runtime's own default).
	// When that default cannot be predicted (a parent cgroup imposes the
	// limit), Apply goes ahead. The blank import sets it.
	KeepExisting bool
	// Insist makes the refresh put fitgo's value back, logging it once,
	// when other code (such as automaxprocs in main) changes GOMAXPROCS.
	// Off: fitgo hands GOMAXPROCS over to whoever changes it.
	Insist bool
	// Logger gets an Info line when GOMAXPROCS changes or fitgo stops
	// managing it, a Debug line when Apply leaves it alone, a Warn line when
	// the CPU limit cannot be read. nil: no logging.
	Logger *slog.Logger
	// Refresh, when positive, keeps GOMAXPROCS in line with the CPU limit at
	// this interval (at least 10ms), until Context is done, Undo, a later
	// Apply, or someone else changes GOMAXPROCS. 0: Apply sets it once.
	Refresh time.Duration
	// Context, when not nil, ends the refresh when it is done.
	Context context.Context
	// Limits are the limits to fit; nil: Apply reads the CPU controller's (cgroup.ReadOnly).
	Limits *cgroup.Limits
	// UpperLimit, when positive, bounds the CPU limit fitgo reads with one
	// known from outside, in cores, such as a quota on a parent cgroup the
	// container cannot see. 0: FITGO_CPU_LIMIT at start-up, if set: cores
	// (1.5), millicores (1500m), or a bare integer of at least 1000 as
	// millicores (the downward API's limits.cpu with divisor 1m); any other
	// value is ignored (SettingErr).
	UpperLimit float64

	env *env // nil: the process
}

// runtimeGrace is how long a refresh leaves a limit change to the Go
// runtime's own update (about once a second) before setting GOMAXPROCS
// itself, which would switch the runtime's updates off.
const runtimeGrace = 2 * time.Second

// env is the world Apply works in: the process, or a fake in tests.
type env struct {
	knob.Env[int]
	numCPU func() int // the CPUs the process may run on now
	rt     goRuntime
}

// processKnob is the process's GOMAXPROCS.
var processKnob = newKnob(func() int { return runtime.GOMAXPROCS(0) }, runtime.GOMAXPROCS, restoreGOMAXPROCS)

func newKnob(get func() int, set, restore func(int) int) *knob.Knob[int] {
	return knob.New(knob.Spec[int]{Name: "GOMAXPROCS", Value: "GOMAXPROCS", Limit: "CPU limit", Key: "cpu_limit", Pkg: "maxprocs",
		Format: strconv.Itoa}, get, set, restore)
}

// cpuLimit is the CPU limit of a reading.
type cpuLimit struct {
	cores  float64
	source string // "" when there is none
}

// LogValue makes a limit log as its cores and source, as memlimit's does.
func (l cpuLimit) LogValue() slog.Value {
	return slog.GroupValue(slog.Float64("cores", l.cores), slog.String("source", l.source))
}

// Result is a snapshot of what Apply did, or what Plan would do, and of its
// refresh.
type Result struct {
	// Before is GOMAXPROCS before Apply; After after it or, from
	// Fit.Status, now. Changed: Apply called runtime.GOMAXPROCS (Plan: would).
	Before, After int
	Changed       bool
	// Limit is the effective CPU limit in cores, 0 for none; Source is where
	// it is set. From Fit.Status: of the last good reading.
	Limit  float64
	Source string
	// CPU is the CPU limit as read at Apply, with the process's hierarchy.
	CPU cgroup.CPU
	// NumCPU is the number of CPUs the process may run on (its affinity).
	NumCPU int
	// Policy is the policy used, with its defaults filled in.
	Policy Policy
	// Env is the GOMAXPROCS environment variable at start-up, "" when unset.
	Env string
	// SettingErr is why FITGO_CPU_LIMIT was ignored (it is not a positive
	// CPU quantity), or GOMAXPROCS, which the runtime ignores too (it is not
	// a positive integer). The limit is fitted as if it were unset.
	SettingErr error
	// Runtime says what the Go runtime does about GOMAXPROCS by itself, and
	// why: from Go 1.25 it derives it from the leaf cgroup (RuntimeAware) and
	// follows changes until runtime.GOMAXPROCS is called (RuntimeUpdates);
	// GODEBUG and the main module's go line decide.
	Runtime                      string
	RuntimeAware, RuntimeUpdates bool
	// Reason says why GOMAXPROCS was left alone ("" when Changed) or, from
	// Fit.Status, why it is not being fitted.
	Reason string
	// Err is why the CPU limit could not be read or the options are invalid
	// (Apply returns it too), or, from Fit.Status, the last reading's error.
	Err error
	// Refresh is the refresh interval, 0 for none; Following: fitgo still
	// follows the limit; Updates counts the refresh's changes, the last at
	// LastUpdate.
	Refresh    time.Duration
	Following  bool
	Updates    int
	LastUpdate time.Time
}

// outcome is the part of r that the knob fills in; set puts it in r.
func (r *Result) outcome() knob.Outcome[int] {
	return knob.Outcome[int]{Before: r.Before, After: r.After, Changed: r.Changed, Following: r.Following, Reason: r.Reason,
		Err: r.Err, SettingErr: r.SettingErr, Refresh: r.Refresh, Updates: r.Updates, LastUpdate: r.LastUpdate}
}

func (r *Result) set(o knob.Outcome[int]) {
	r.Before, r.After, r.Changed, r.Following, r.Reason, r.Err = o.Before, o.After, o.Changed, o.Following, o.Reason, o.Err
	r.Refresh, r.Updates, r.LastUpdate = o.Refresh, o.Updates, o.LastUpdate // SettingErr is the package's
}

// Fit is the management of GOMAXPROCS that an Apply started.
type Fit struct {
	res   Result
	f     *knob.Fit[int, cpuLimit] // nil when Apply left GOMAXPROCS alone for good
	env   *env
	loop  *knob.Loop
	upper cpuLimit // the upper limit; cores 0: none

	// The refresh goroutine's only.
	seen      cpuLimit
	ncpu      int
	changedAt time.Time
	otherFor  float64 // the limit of otherWhy, automaxprocs' rule
	otherWhy  string
	adopt     [2]int // the runtime's own value for the current limit and the one before
}

// Apply sets GOMAXPROCS from the effective CPU limit of the process's
// cgroup hierarchy, by the policy of the options. It leaves GOMAXPROCS
// alone, with the Reason in the Result, when the GOMAXPROCS environment
// variable holds a value the runtime honours, the system is not Linux or
// has no cgroup, there is no CPU limit, or GOMAXPROCS already has the value
// (then it does not call runtime.GOMAXPROCS, which would switch off the Go
// 1.25 runtime's updates). When the limit cannot be read or the options are
// invalid, it returns the error, also in the Result. A later Apply takes over.
func Apply(o Options) (*Fit, error) {
	f, a := prepare(&o)
	var out knob.Outcome[int]
	f.f, f.loop, out = a.Run(f.res.outcome(), false)
	f.res.set(out)
	f.env.Knob.LogApply(o.Logger, f.res.outcome(), "result", f.res, "runtime", f.res.Runtime)
	return f, f.res.Err
}

// Plan reports what Apply would do with the same options, without changing
// GOMAXPROCS or starting a refresh.
func Plan(o Options) (Result, error) {
	f, a := prepare(&o)
	_, _, out := a.Run(f.res.outcome(), true)
	f.res.set(out)
	return f.res, f.res.Err
}

// prepare makes the Apply of the options, with the Fit it fills in.
func prepare(o *Options) (*Fit, *knob.Apply[int, cpuLimit]) {
	e := o.env
	if e == nil {
		e = &env{Env: knob.Process(processKnob, nil, "cpu"), numCPU: (&statusFile{name: "/proc/self/status"}).affinity, rt: systemRuntime()}
	}
	f := &Fit{env: e, ncpu: e.numCPU(), res: Result{Policy: o.Policy.resolved(), Env: e.Getenv("GOMAXPROCS"),
		Runtime: e.rt.why, RuntimeAware: e.rt.aware, RuntimeUpdates: e.rt.updates}}
	r := &f.res
	r.NumCPU = f.ncpu
	a := &knob.Apply[int, cpuLimit]{Env: &e.Env, Tick: f.tick, Insist: o.Insist, Logger: o.Logger,
		Refresh: o.Refresh, Context: o.Context, Limits: o.Limits}
	n, set := envvar.GOMAXPROCS(r.Env)
	switch a.Err = cmp.Or(o.Policy.validate(), f.setUpper(o.UpperLimit, e.Getenv(envvar.CPULimitVar))); {
	case a.Err != nil:
		a.Left = "invalid options"
	case e.GOOS != "linux":
		a.Left = "not Linux: no cgroup limits"
	case set:
		a.Left = "GOMAXPROCS=" + strconv.Itoa(n) + " is set in the environment"
	case r.Env != "":
		r.SettingErr = errors.Join(r.SettingErr, errors.New("maxprocs: GOMAXPROCS="+r.Env+" is not a positive integer: the Go runtime ignores it; ignored"))
	}
	def := -1 // the runtime's default for the reading at Apply, when it could be read
	a.Read = func(lim cgroup.Limits, err error) knob.Reading[int, cpuLimit] {
		rd := knob.Reading[int, cpuLimit]{Err: f.cpuErr(lim, err), Why: "no CPU limit"}
		rd.Limit, rd.Has, rd.Want, f.adopt[0] = f.derive(lim)
		f.seen, r.CPU, r.Limit, r.Source, f.adopt[1] = rd.Limit, lim.CPU, rd.Limit.cores, rd.Limit.source, f.adopt[0]
		if errors.Is(rd.Err, cgroup.ErrNoCgroup) {
			rd.Why = "no cgroup information (no /proc/self/cgroup)"
		} else if rd.Err == nil {
			def = f.adopt[0]
		}
		return rd
	}
	a.Same = func(want int) string {
		s := "GOMAXPROCS is already " + strconv.Itoa(want)
		if r.Limit >= float64(f.ncpu) {
			s += ": the CPU limit (" + formatCores(r.Limit) + ") is not below the CPU count (" + strconv.Itoa(f.ncpu) + ")"
		}
		if e.rt.updates {
			s += "; left to the Go runtime, whose own updates stay on"
		}
		return s
	}
	if o.KeepExisting {
		a.Keep = func(before int) string {
			if def <= 0 || before == def {
				return "" // the runtime's own value, or one that cannot be told from it
			}
			return "GOMAXPROCS is already " + strconv.Itoa(before) + ", not the runtime's default " + strconv.Itoa(def) +
				": set by the program or a library, and kept"
		}
	}
	return f, a
}

// cpuErr is a reading's error for the CPU limit: without a cgroup, the
// upper limit is still one to follow.
func (f *Fit) cpuErr(lim cgroup.Limits, err error) error {
	return knob.ErrFor(err, lim.CPU.Err, lim.Memory.Err, f.upper.cores > 0)
}

// setUpper sets the upper limit from opt or else env, FITGO_CPU_LIMIT.
func (f *Fit) setUpper(opt float64, env string) error {
	m, err := envvar.CPULimit(env)
	switch {
	case !(opt >= 0) || math.IsInf(opt, 0):
		return fmt.Errorf("maxprocs: invalid options: UpperLimit %v: want a finite number of cores >= 0", opt)
	case opt > 0:
		f.upper = cpuLimit{opt, "Options.UpperLimit"}
	case err != nil: // ignored, as if unset
		f.res.SettingErr = fmt.Errorf("maxprocs: %w; ignored", err)
	case m > 0:
		f.upper = cpuLimit{float64(m) / 1000, "$" + envvar.CPULimitVar}
	}
	return nil
}

func formatCores(q float64) string { return strconv.FormatFloat(q, 'f', -1, 64) + " cores" }

// derive is where a reading lim becomes GOMAXPROCS on f.ncpu CPUs, at every
// reading: the effective limit l (has: there is one), fitgo's value for it
// and the runtime's own (runtimeDefault).
func (f *Fit) derive(lim cgroup.Limits) (l cpuLimit, has bool, want, def int) {
	if q, ok := lim.CPUQuota(); ok {
		l, has = cpuLimit{q, lim.CPU.Source}, true
	}
	if u := f.upper; u.cores > 0 && (!has || u.cores < l.cores) {
		l, has = u, true
	}
	return l, has, f.res.Policy.Procs(l.cores, f.ncpu), f.env.rt.runtimeDefault(lim, f.ncpu)
}

// tick fits GOMAXPROCS to a reading of the refresh loop. It records a new
// CPU limit and the runtime's default for it at once, to tell the runtime's
// own updates from someone else's changes, and reads the CPU affinity again
// when the value moved and the runtime updates it (it follows that too).
func (f *Fit) tick(k *knob.Fit[int, cpuLimit], now time.Time, lim cgroup.Limits, err error) bool {
	rd := knob.Reading[int, cpuLimit]{Limit: f.seen, Err: f.cpuErr(lim, err)}
	if rd.Err != nil {
		return k.Step(now, rd)
	}
	rt := f.env.rt
	seen, moved := k.Moved()
	if moved = moved && rt.updates; moved {
		f.ncpu = f.env.numCPU()
	}
	cl, has, want, def := f.derive(lim)
	if cl != f.seen {
		f.changedAt, f.adopt[1] = now, f.adopt[0]
	}
	if cl != f.seen || moved {
		f.seen, f.adopt[0] = cl, def
	}
	rd.Limit, rd.Has, rd.Want, rd.Runtime, rd.Adopt, rd.Seen = cl, has, want, rt.updates, f.adopt, seen
	rd.Wait, rd.Default = f.adopt[0] == want && now.Sub(f.changedAt) < runtimeGrace, runtimeContainerSupport && want == f.adopt[0]
	rd.Other, rd.OtherWhy = f.automaxprocs(lim)
	return k.Step(now, rd)
}

// automaxprocs is what automaxprocs' Set gives for lim, and its rule ("" for
// none): the leaf's quota rounded down, at least 1; the text is made once
// per limit.
func (f *Fit) automaxprocs(lim cgroup.Limits) (int, string) {
	q, ok := lim.CPUQuota()
	if !ok {
		return 0, ""
	}
	if q != f.otherFor || f.otherWhy == "" {
		f.otherFor, f.otherWhy = q, "automaxprocs' floor of "+formatCores(q)
	}
	return Policy{Rounding: Floor}.Procs(q, math.MaxInt32), f.otherWhy
}

// Status returns a snapshot of the management: the Result of Apply with
// After, the limit, Err and Reason of now.
func (f *Fit) Status() Result {
	if f == nil {
		return Result{Before: processKnob.Current(), After: processKnob.Current(), Reason: "not applied"}
	}
	r := f.res
	out, l, ok := f.f.Fill(f.env.Knob, r.outcome())
	if r.set(out); ok {
		r.Limit, r.Source = l.cores, l.source
	}
	return r
}

// Undo ends the refresh and takes this Apply back: when it is the Apply in
// force and GOMAXPROCS is still fitgo's value, it goes back to the value of
// the Apply before it or, once every Apply is undone, to the state from
// before fitgo (from Go 1.25 the runtime's default and its own updates);
// not when someone else has changed it since. Calling it again does nothing.
func (f *Fit) Undo() {
	if f != nil && f.f != nil {
		f.f.Undo()
	}
}

// String summarises the result in one line.
func (r Result) String() string {
	lim := ""
	if r.Source != "" {
		lim = "CPU limit " + formatCores(r.Limit) + " from " + r.Source
	}
	return processKnob.Summary(r.outcome(), lim, r.Policy.String())
}

// LogValue makes a Result log as a group of its main fields.
func (r Result) LogValue() slog.Value {
	var lim []slog.Attr
	if r.Source != "" {
		lim = []slog.Attr{slog.Float64("cpu_limit", r.Limit), slog.String("source", r.Source)}
	}
	return processKnob.LogValue(r.outcome(), append(lim, slog.String("policy", r.Policy.String()), slog.Int("num_cpu", r.NumCPU))...)
}

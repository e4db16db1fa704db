package maxprocs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// Policy turns the CPU limit into GOMAXPROCS; the zero Policy is the
	// default.
	Policy
	// KeepExisting leaves GOMAXPROCS alone when it is no longer the
	// runtime's own default: when the program or a library has already
	// called runtime.GOMAXPROCS (an earlier init, say). When that default
	// cannot be predicted (a parent cgroup imposes the limit), Apply goes
	// ahead. The blank import sets it.
	KeepExisting bool
	// Logger gets one Info line when GOMAXPROCS changes or when fitgo stops
	// managing it, a Debug line when Apply leaves it alone, and a Warn line
	// when the CPU limit cannot be read. nil: nothing is logged.
	Logger *slog.Logger
	// Refresh, when positive, keeps GOMAXPROCS in line with the CPU limit
	// after Apply returns, re-reading it at this interval (at least 10ms).
	// Following stops when Context is done, at Stop or Undo, when a later
	// Apply takes over, or when someone else changes GOMAXPROCS. 0: Apply
	// sets GOMAXPROCS once.
	Refresh time.Duration
	// Context, when not nil, ends the refresh when it is done.
	Context context.Context
	// Limits are the limits to fit; nil: Apply reads them (cgroup.Read).
	Limits *cgroup.Limits

	env *env // nil: the process
}

// runtimeGrace is how long a refresh waits, after a limit change, for the Go
// runtime's own update to reach the value fitgo wants before setting it
// itself (which would switch the runtime's updates off). The runtime checks
// about once a second.
const runtimeGrace = 2 * time.Second

// env is the world Apply works in: the process, or a fake in tests.
type env struct {
	goos   string
	getenv func(string) string // the start-up environment
	numCPU func() int          // the CPUs the process may run on now
	rt     Runtime
	knob   *knob.Knob[int]
	read   func() (cgroup.Limits, error)
	open   func() (knob.Source, error)
	ticks  <-chan time.Time // the refresh loop's ticks; nil: a ticker
}

// processKnob is the process's GOMAXPROCS.
var processKnob = knob.New(text(),
	func() int { return runtime.GOMAXPROCS(0) },
	func(n int) int { return runtime.GOMAXPROCS(n) },
	restoreGOMAXPROCS,
)

func systemEnv() *env {
	return &env{
		goos:   runtime.GOOS,
		getenv: envvar.Startup(),
		numCPU: affinity,
		rt:     systemRuntime(),
		knob:   processKnob,
		read:   cgroup.Read,
		open:   knob.OpenProcess,
	}
}

// text is GOMAXPROCS's wording.
func text() knob.Text {
	return knob.Text{Name: "GOMAXPROCS", Value: "GOMAXPROCS", Limit: "CPU limit", Key: "cpu_limit"}
}

// cpuLimit is the CPU limit of a reading.
type cpuLimit struct {
	cores  float64
	source string // "" when there is none
}

func (l cpuLimit) LogValue() slog.Value {
	return slog.GroupValue(slog.Float64("cores", l.cores), slog.String("source", l.source))
}

// Result is a snapshot of what Apply did, or what Plan would do, and of its
// refresh.
type Result struct {
	// Before is GOMAXPROCS before Apply; After is GOMAXPROCS after it or,
	// from Fit.Status, now.
	Before, After int
	// Changed reports whether Apply called runtime.GOMAXPROCS (for Plan:
	// would).
	Changed bool
	// Limit is the effective CPU limit in cores (the tightest quota/period
	// over the cgroup hierarchy), 0 when there is none; Source is the cgroup
	// directory that imposed it. From Fit.Status: of the last good reading.
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
	// Runtime is what the Go runtime does about GOMAXPROCS by itself.
	Runtime Runtime
	// Reason says why GOMAXPROCS was left alone ("" when Changed) or, from
	// Fit.Status, why it is not being fitted: following stopped, or the
	// last reading failed.
	Reason string
	// Err is why the CPU limit could not be read or the options are
	// invalid (GOMAXPROCS is then untouched; Apply returns it too), or, from
	// Fit.Status, the error of the last reading.
	Err error
	// Refresh is the refresh interval, 0 when there is none. Following
	// reports whether fitgo still follows the limit; Updates counts the
	// changes its refresh made, the last at LastUpdate.
	Refresh    time.Duration
	Following  bool
	Updates    int
	LastUpdate time.Time
}

// Fit is the management of GOMAXPROCS that an Apply started.
type Fit struct {
	res  Result
	f    *knob.Fit[int, cpuLimit] // nil when Apply left GOMAXPROCS alone for good
	env  *env
	loop *knob.Loop

	// The refresh's view, used by its goroutine only.
	seen      cpuLimit
	ncpu      int
	changedAt time.Time
	rtDef     int // the runtime's own value for the current limit
	rtPrev    int // and for the one before
}

// Apply sets GOMAXPROCS from the effective CPU limit of the process's
// cgroup hierarchy, by the policy of the options.
//
// It leaves GOMAXPROCS alone, with the Reason in the Result, when: the
// GOMAXPROCS environment variable holds a value the runtime honours (an
// integer > 0); the system is not Linux or has no cgroup; there is no CPU
// limit; or GOMAXPROCS already has the value. In the last case it does not
// call runtime.GOMAXPROCS, which on Go 1.25 and later switches off the
// runtime's own updates.
//
// When the limit cannot be read (a malformed cgroup file) or the options
// are invalid, Apply leaves GOMAXPROCS alone and returns the error, which is
// also in the Result. A later Apply takes over from an earlier one.
func Apply(o Options) (*Fit, error) {
	f := apply(&o, false)
	logApply(o.Logger, &f.res)
	return f, f.res.Err
}

// Plan reports what Apply would do with the same options, without changing
// GOMAXPROCS or starting a refresh.
func Plan(o Options) (Result, error) {
	f := apply(&o, true)
	return f.res, f.res.Err
}

func apply(o *Options, dry bool) *Fit {
	e := o.env
	if e == nil {
		e = systemEnv()
	}
	p := o.Policy.resolved()
	f := &Fit{env: e, ncpu: e.numCPU(), res: Result{Policy: p, Env: e.getenv("GOMAXPROCS"), Runtime: e.rt}}
	r := &f.res
	r.NumCPU = f.ncpu
	r.Before = e.knob.Current()
	r.After = r.Before
	switch n, set := envvar.GOMAXPROCS(r.Env); {
	case o.Policy.validate() != nil:
		r.Err, r.Reason = o.Policy.validate(), "invalid options"
		return f
	case e.goos != "linux":
		r.Reason = "not Linux: no cgroup limits"
		return f
	case set:
		r.Reason = "GOMAXPROCS=" + strconv.Itoa(n) + " is set in the environment"
		return f
	}
	var lim cgroup.Limits
	var err error
	if o.Limits != nil {
		lim = *o.Limits
	} else {
		lim, err = e.read()
	}
	r.CPU = lim.CPU
	q, has := lim.CPUQuota()
	if has {
		f.seen = cpuLimit{q, lim.CPU.Source}
		r.Limit, r.Source = q, lim.CPU.Source
	}
	f.rtDef = e.rt.runtimeDefault(lim, f.ncpu)
	f.rtPrev = f.rtDef
	cerr := cpuErr(lim, err)
	noCgroup := errors.Is(err, cgroup.ErrNoCgroup)
	follow := o.Refresh > 0 && !dry && !noCgroup
	for {
		before, mine := e.knob.Peek()
		r.Before, r.After, r.Changed, r.Reason, r.Err = before, before, false, "", nil
		switch def := f.rtDef; {
		case noCgroup:
			r.Reason = "no cgroup information (no /proc/self/cgroup)"
		case o.KeepExisting && !mine && def > 0 && before != def && cerr == nil:
			r.Reason = "GOMAXPROCS is already " + strconv.Itoa(before) + ", not the runtime's default " + strconv.Itoa(def) +
				": set by the program or a library, and kept"
			return f
		case cerr != nil:
			r.Err = fmt.Errorf("maxprocs: reading the CPU limit: %w", cerr)
			r.Reason = "the CPU limit cannot be read"
		case !has:
			r.Reason = "no CPU limit"
		default:
			if want := p.Procs(q, f.ncpu); want != before {
				r.After, r.Changed = want, true
			} else {
				r.Reason = sameReason(want, q, f.ncpu, e.rt)
			}
		}
		if dry {
			return f
		}
		var ok bool
		if f.f, ok = knob.Start(e.knob, o.Logger, before, r.After, r.Changed, follow, f.seen, cerr); ok {
			break
		}
	}
	if follow {
		f.loop = f.f.Join(o.Context, o.Refresh, e.open, e.ticks, f.tick)
		r.Refresh, r.Following = f.loop.Every(), true
	}
	return f
}

// cpuErr is the error of a reading that concerns the CPU limit.
func cpuErr(lim cgroup.Limits, err error) error { return knob.ErrFor(err, lim.CPU.Err, lim.Memory.Err) }

func sameReason(n int, q float64, ncpu int, rt Runtime) string {
	s := "GOMAXPROCS is already " + strconv.Itoa(n)
	if q >= float64(ncpu) {
		s += ": the CPU limit (" + formatCores(q) + ") is not below the CPU count (" + strconv.Itoa(ncpu) + ")"
	}
	if rt.Updates {
		s += "; left to the Go runtime, whose own updates stay on"
	}
	return s
}

func formatCores(q float64) string {
	return strconv.FormatFloat(q, 'f', -1, 64) + " cores"
}

// tick fits GOMAXPROCS to a reading of the refresh loop. A new CPU limit,
// and the runtime's default for it, are recorded at once: they tell the
// runtime's own updates from someone else's changes. When the value moved
// and the runtime updates it itself, the CPU affinity is read again (the
// runtime follows it too).
func (f *Fit) tick(now time.Time, lim cgroup.Limits, err error) bool {
	rd := knob.Reading[int, cpuLimit]{Limit: f.seen}
	if rd.Err = cpuErr(lim, err); rd.Err != nil || errors.Is(err, cgroup.ErrNoCgroup) {
		if rd.Err == nil {
			rd.Err = err
		}
		return f.f.Step(now, rd)
	}
	rt := f.env.rt
	q, has := lim.CPUQuota()
	cl := cpuLimit{}
	if has {
		cl = cpuLimit{q, lim.CPU.Source}
	}
	seen, moved := f.f.Moved()
	moved = moved && rt.Updates
	if moved {
		f.ncpu = f.env.numCPU()
	}
	if cl != f.seen || moved {
		if cl != f.seen {
			f.changedAt = now
			f.rtPrev = f.rtDef
		}
		f.seen = cl
		f.rtDef = rt.runtimeDefault(lim, f.ncpu)
	}
	rd.Limit, rd.Has = cl, has
	rd.Want = f.res.Policy.Procs(q, f.ncpu)
	rd.Adopting, rd.Adopt = rt.Updates, [2]int{f.rtDef, f.rtPrev}
	rd.Wait = rt.Updates && f.rtDef == rd.Want && now.Sub(f.changedAt) < runtimeGrace
	rd.Seen, rd.Checked = seen, rt.Updates
	return f.f.Step(now, rd)
}

// Status returns a snapshot of the management: the Result of Apply with
// After, the limit, Err and Reason of now.
func (f *Fit) Status() Result {
	if f == nil {
		return Result{Before: processKnob.Current(), After: processKnob.Current(), Reason: "not applied"}
	}
	r := f.res
	if f.f == nil {
		r.After = f.env.knob.Current()
		return r
	}
	st := f.f.State()
	r.After, r.Following, r.Updates, r.LastUpdate = st.Value, st.Following, st.Updates, st.LastUpdate
	r.Limit, r.Source = st.Limit.cores, st.Limit.source
	if st.Following {
		r.Err = st.Err
	}
	if why := f.f.Why(st, strconv.Itoa); why != "" {
		r.Reason = why
	}
	return r
}

// Stop stops following the CPU limit, leaving GOMAXPROCS as it is. Calling
// it again does nothing.
func (f *Fit) Stop() {
	if f != nil && f.f != nil {
		f.f.Stop()
	}
}

// Undo stops following the CPU limit and takes this Apply back: when it is
// the Apply in force and GOMAXPROCS is still fitgo's value, GOMAXPROCS goes
// back to the value of the Apply before it or, once every Apply is undone,
// to the state from before fitgo (with Go 1.25 and later the runtime's
// default, runtime.SetDefaultGOMAXPROCS, so that the runtime's own updates
// resume). It restores nothing when someone else has changed GOMAXPROCS
// since. Undo in any order gives the state from before fitgo back once all
// are undone; calling it again does nothing.
func (f *Fit) Undo() {
	if f != nil && f.f != nil {
		f.f.Undo()
	}
}

// String summarises the result in one line.
func (r Result) String() string {
	s := "GOMAXPROCS " + strconv.Itoa(r.Before)
	if r.Changed {
		s += " -> " + strconv.Itoa(r.After)
	} else {
		s += " (unchanged: " + r.Reason + ")"
	}
	if r.Source != "" {
		s += "; CPU limit " + formatCores(r.Limit) + " from " + r.Source
	}
	s += "; policy " + r.Policy.String()
	if r.Err != nil {
		s += "; error: " + r.Err.Error()
	}
	return s
}

// LogValue makes a Result log as a group of its main fields.
func (r Result) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Int("before", r.Before),
		slog.Int("after", r.After),
		slog.Bool("changed", r.Changed),
	}
	if r.Source != "" {
		attrs = append(attrs, slog.Float64("cpu_limit", r.Limit), slog.String("source", r.Source))
	}
	attrs = append(attrs, slog.String("policy", r.Policy.String()), slog.Int("num_cpu", r.NumCPU))
	if r.Reason != "" {
		attrs = append(attrs, slog.String("reason", r.Reason))
	}
	if r.Err != nil {
		attrs = append(attrs, slog.String("err", r.Err.Error()))
	}
	if r.Refresh > 0 {
		attrs = append(attrs, slog.String("refresh", r.Refresh.String()))
	}
	return slog.GroupValue(attrs...)
}

func logApply(l *slog.Logger, r *Result) {
	knob.LogApply(l, "GOMAXPROCS", r.Reason, r.Changed, r.Err, "result", *r, "runtime", r.Runtime.Why)
}

package memlimit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
)

// NoLimit is the runtime's memory limit when there is none
// (debug.SetMemoryLimit's default, and GOMEMLIMIT=off).
const NoLimit int64 = math.MaxInt64

// Options configure Apply and Plan. The zero value of every field means the
// default.
type Options struct {
	// Policy turns the memory limit into GOMEMLIMIT; the zero Policy is the
	// default.
	Policy
	// SystemMemory uses the machine's total memory (MemTotal in
	// /proc/meminfo) as the limit when the cgroup hierarchy has none. Off by
	// default: without a container limit, a soft limit at 90% of the
	// machine's memory is a guess about what else runs there.
	SystemMemory bool
	// KeepExisting leaves the memory limit alone when it is already set (not
	// NoLimit) by the program or a library through debug.SetMemoryLimit (an
	// earlier init, say). The blank import sets it.
	KeepExisting bool
	// Logger gets one Info line when GOMEMLIMIT changes or when fitgo stops
	// managing it, a Debug line when Apply leaves it alone, and a Warn line
	// when the memory limit cannot be read. nil: nothing is logged.
	Logger *slog.Logger
	// Refresh, when positive, keeps GOMEMLIMIT in line with the memory limit
	// after Apply returns, re-reading it at this interval (at least 10ms).
	// Following stops when Context is done, at Stop or Undo, when a later
	// Apply takes over, or when someone else changes the memory limit. 0:
	// Apply sets GOMEMLIMIT once.
	Refresh time.Duration
	// Context, when not nil, ends the refresh when it is done.
	Context context.Context
	// Limits are the limits to fit; nil: Apply reads them (cgroup.Read).
	Limits *cgroup.Limits

	env *env // nil: the process
}

// env is the world Apply works in: the process, or a fake in tests.
type env struct {
	goos   string
	getenv func(string) string // the start-up environment
	fsys   fs.FS               // for /proc/meminfo
	knob   *knob.Knob[int64]
	read   func() (cgroup.Limits, error)
	open   func() (knob.Source, error)
	ticks  <-chan time.Time // the refresh loop's ticks; nil: a ticker
}

// processKnob is the process's memory limit.
var processKnob = knob.New(text(),
	func() int64 { return debug.SetMemoryLimit(-1) },
	debug.SetMemoryLimit,
	debug.SetMemoryLimit,
)

func systemEnv() *env {
	return &env{
		goos:   runtime.GOOS,
		getenv: envvar.Startup(),
		fsys:   os.DirFS("/"),
		knob:   processKnob,
		read:   cgroup.Read,
		open:   knob.OpenProcess,
	}
}

// text is GOMEMLIMIT's wording.
func text() knob.Text {
	return knob.Text{Name: "GOMEMLIMIT", Value: "the memory limit", Limit: "memory limit", Key: "memory_limit"}
}

// memLimit is the memory limit of a reading.
type memLimit struct {
	bytes  int64
	source string // "" when there is none
	from   string // the file or field it comes from
}

func (l memLimit) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("bytes", l.bytes), slog.String("source", l.source), slog.String("from", l.from))
}

// Result is a snapshot of what Apply did, or what Plan would do, and of its
// refresh.
type Result struct {
	// Before is the runtime's memory limit (GOMEMLIMIT) before Apply; After
	// is the limit after it or, from Fit.Status, now; NoLimit when none.
	Before, After int64
	// Changed reports whether Apply called debug.SetMemoryLimit (for Plan:
	// would).
	Changed bool
	// Limit is the memory limit in bytes the value was derived from: the
	// tightest hard limit over the cgroup hierarchy, or memory.high when
	// lower, or with SystemMemory the machine's MemTotal. Source is the
	// cgroup directory that imposed it (or "/proc/meminfo"), "" when there is
	// no limit; From names the file: "memory.max", "memory.high",
	// "memory.limit_in_bytes" or "MemTotal". From Fit.Status: of the last
	// good reading.
	Limit        int64
	Source, From string
	// Memory is the memory limit as read at Apply, with the hierarchy.
	Memory cgroup.Memory
	// Policy is the policy used, with its defaults filled in.
	Policy Policy
	// Env is the GOMEMLIMIT environment variable at start-up, "" when unset.
	Env string
	// Reason says why the memory limit was left alone ("" when Changed) or,
	// from Fit.Status, why it is not being fitted: following stopped, or the
	// last reading failed.
	Reason string
	// Err is why the memory limit could not be read or the options are
	// invalid (GOMEMLIMIT is then untouched; Apply returns it too), or, from
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

// Fit is the management of the memory limit that an Apply started.
type Fit struct {
	res      Result
	f        *knob.Fit[int64, memLimit] // nil when Apply left the limit alone for good
	env      *env
	memTotal int64 // MemTotal with SystemMemory, else 0
	loop     *knob.Loop
}

// effective picks the limit of a reading: the lower of the hard limit and
// memory.high where set (a limit of 0 is a limit), else memTotal when
// positive.
func effective(lim cgroup.Limits, memTotal int64) (memLimit, bool) {
	m := lim.Memory
	var l memLimit
	has := false
	if max, ok := lim.MemoryMax(); ok {
		l, has = memLimit{max, m.MaxSource, "memory.max"}, true
		if m.Version == cgroup.V1 {
			l.from = "memory.limit_in_bytes"
		}
	}
	if high, ok := lim.MemoryHigh(); ok && (!has || high < l.bytes) {
		l, has = memLimit{high, m.HighSource, "memory.high"}, true
	}
	if !has && memTotal > 0 {
		l, has = memLimit{memTotal, "/proc/meminfo", "MemTotal"}, true
	}
	return l, has
}

// Apply sets the Go runtime's soft memory limit (GOMEMLIMIT) from the
// effective memory limit of the process's cgroup hierarchy, by the policy of
// the options.
//
// It leaves the memory limit alone, with the Reason in the Result, when the
// GOMEMLIMIT environment variable is set (a byte count or "off"), when the
// system is not Linux or has no cgroup, when there is no memory limit
// (unless SystemMemory), when the policy leaves it unset, and when it
// already has the value. It never sets NoLimit: it cannot clear a limit the
// program set.
//
// When the memory limit cannot be read (a malformed cgroup file) or the
// options are invalid, Apply leaves it alone and returns the error, which is
// also in the Result. A later Apply takes over from an earlier one.
func Apply(o Options) (*Fit, error) {
	f := apply(&o, false)
	logApply(o.Logger, &f.res)
	return f, f.res.Err
}

// Plan reports what Apply would do with the same options, without changing
// the memory limit or starting a refresh.
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
	f := &Fit{env: e, res: Result{Policy: p, Env: e.getenv("GOMEMLIMIT")}}
	r := &f.res
	r.Before = e.knob.Current()
	r.After = r.Before
	_, kind := envvar.GOMEMLIMIT(r.Env)
	switch before, mine := e.knob.Peek(); {
	case o.Policy.validate() != nil:
		r.Err, r.Reason = o.Policy.validate(), "invalid options"
		return f
	case e.goos != "linux":
		r.Reason = "not Linux: no cgroup limits"
		return f
	case kind == envvar.MemLimitOff || kind == envvar.MemLimitBytes:
		r.Reason = "GOMEMLIMIT=" + r.Env + " is set in the environment"
		return f
	case o.KeepExisting && before != NoLimit && !mine:
		r.Reason = "the memory limit is already " + formatBytes(before) + ": set by the program or a library, and kept"
		return f
	}
	var memErr error
	if o.SystemMemory {
		f.memTotal, memErr = readMemTotal(e.fsys)
	}
	var lim cgroup.Limits
	var err error
	if o.Limits != nil {
		lim = *o.Limits
	} else {
		lim, err = e.read()
	}
	noCgroup := errors.Is(err, cgroup.ErrNoCgroup)
	r.Memory = lim.Memory
	l, has := effective(lim, f.memTotal)
	if has {
		r.Limit, r.Source, r.From = l.bytes, l.source, l.from
	}
	merr := memoryErr(lim, err)
	follow := o.Refresh > 0 && !dry && !(noCgroup && f.memTotal == 0)
	for {
		before, _ := e.knob.Peek()
		r.Before, r.After, r.Changed, r.Reason, r.Err = before, before, false, "", nil
		want := p.SoftLimit(l.bytes)
		switch {
		case noCgroup && !has:
			r.Reason = "no cgroup information (no /proc/self/cgroup)"
			if memErr != nil {
				r.Reason += "; no system memory either: " + memErr.Error()
			}
		case merr != nil:
			r.Err = fmt.Errorf("memlimit: reading the memory limit: %w", merr)
			r.Reason = "the memory limit cannot be read"
		case !has:
			r.Reason = "no memory limit"
			if memErr != nil {
				r.Reason += "; no system memory either: " + memErr.Error()
			}
		case want == 0:
			r.Reason = tinyReason(p, l)
		case want == before:
			r.Reason = "GOMEMLIMIT is already " + formatBytes(want)
		default:
			r.After, r.Changed = want, true
		}
		if dry {
			return f
		}
		var ok bool
		if f.f, ok = knob.Start(e.knob, o.Logger, before, r.After, r.Changed, follow, l, merr); ok {
			break
		}
	}
	if follow {
		f.loop = f.f.Join(o.Context, o.Refresh, e.open, e.ticks, f.tick)
		r.Refresh, r.Following = f.loop.Every(), true
	}
	return f
}

// tinyReason says why the policy leaves GOMEMLIMIT unset for limit l.
func tinyReason(p Policy, l memLimit) string {
	lim := formatBytes(l.bytes) + " " + l.from
	switch raw := p.raw(l.bytes); {
	case p.Reserve > 0 && l.bytes-p.Reserve <= 0:
		return "the reserve (" + formatBytes(p.Reserve) + ") leaves nothing of the " + lim + " limit"
	case raw <= 0:
		return "a " + lim + " limit leaves nothing for a soft limit; GOMEMLIMIT left unset"
	default:
		return formatBytes(raw) + " (from a " + formatBytes(l.bytes) + " limit) is below the minimum of " +
			formatBytes(p.Min) + ": too little for the heap next to the runtime's own memory; GOMEMLIMIT left unset"
	}
}

// readMemTotal reads MemTotal from proc/meminfo in fsys.
func readMemTotal(fsys fs.FS) (int64, error) {
	data, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, err
	}
	n, err := parseMemTotal(data)
	if err != nil {
		return 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return n, nil
}

// memoryErr is the error of a reading that concerns the memory limit.
func memoryErr(lim cgroup.Limits, err error) error {
	return knob.ErrFor(err, lim.Memory.Err, lim.CPU.Err)
}

// tick fits the memory limit to a reading of the refresh loop.
func (f *Fit) tick(now time.Time, lim cgroup.Limits, err error) bool {
	var rd knob.Reading[int64, memLimit]
	if rd.Err = memoryErr(lim, err); rd.Err != nil {
		return f.f.Step(now, rd)
	}
	if errors.Is(err, cgroup.ErrNoCgroup) && f.memTotal == 0 {
		rd.Err = err
		return f.f.Step(now, rd)
	}
	l, has := effective(lim, f.memTotal)
	rd.Limit, rd.Want = l, f.res.Policy.SoftLimit(l.bytes)
	rd.Has = has && rd.Want != 0
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
	r.Limit, r.Source, r.From = st.Limit.bytes, st.Limit.source, st.Limit.from
	if st.Following {
		r.Err = st.Err
	}
	if why := f.f.Why(st, formatBytes); why != "" {
		r.Reason = why
	}
	return r
}

// Stop stops following the memory limit, leaving it as it is. Calling it
// again does nothing.
func (f *Fit) Stop() {
	if f != nil && f.f != nil {
		f.f.Stop()
	}
}

// Undo stops following the memory limit and takes this Apply back: when it
// is the Apply in force and the runtime's limit is still fitgo's value, it
// goes back to the value of the Apply before it or, once every Apply is
// undone, to the value from before fitgo. It restores nothing when someone
// else has changed the limit since. Undo in any order gives the value from
// before fitgo back once all are undone; calling it again does nothing.
func (f *Fit) Undo() {
	if f != nil && f.f != nil {
		f.f.Undo()
	}
}

// String summarises the result in one line.
func (r Result) String() string {
	s := "GOMEMLIMIT " + formatBytes(r.Before)
	if r.Changed {
		s += " -> " + formatBytes(r.After)
	} else {
		s += " (unchanged: " + r.Reason + ")"
	}
	if r.Source != "" {
		s += "; " + r.From + " " + formatBytes(r.Limit) + " from " + r.Source
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
		slog.Int64("before", r.Before),
		slog.Int64("after", r.After),
		slog.Bool("changed", r.Changed),
	}
	if r.Source != "" {
		attrs = append(attrs, slog.Int64("memory_limit", r.Limit), slog.String("source", r.Source), slog.String("from", r.From))
	}
	attrs = append(attrs, slog.String("policy", r.Policy.String()))
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
	knob.LogApply(l, "GOMEMLIMIT", r.Reason, r.Changed, r.Err, "result", *r)
}

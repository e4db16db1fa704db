package memlimit

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
)

// noLimit is the runtime's memory limit when there is none.
const noLimit int64 = math.MaxInt64

// Options configure Apply and Plan. The zero value of every field means the
// default.
type Options struct {
	// Policy turns the memory limit into GOMEMLIMIT.
	Policy
	// SystemMemory uses the machine's total memory (MemTotal in
	// /proc/meminfo) as the limit when the cgroup hierarchy has none.
	SystemMemory bool
	// KeepExisting leaves the memory limit alone when the program or a
	// library has already set one. The blank import sets it.
	KeepExisting bool
	// Insist makes the refresh put fitgo's value back, logging it once, when
	// other code (such as automemlimit in main) changes the memory limit.
	// Off: fitgo hands the limit over to whoever changes it.
	Insist bool
	// Logger gets an Info line when GOMEMLIMIT changes or fitgo stops
	// managing it, a Debug line when Apply leaves it alone, a Warn line when
	// the memory limit cannot be read. nil: no logging.
	Logger *slog.Logger
	// Refresh, when positive, keeps GOMEMLIMIT in line with the memory limit
	// at this interval (at least 10ms), until Context is done, Undo, a later
	// Apply, or someone else changes the memory limit. 0: Apply sets it once.
	Refresh time.Duration
	// Context, when not nil, ends the refresh when it is done.
	Context context.Context
	// Limits are the limits to fit; nil: Apply reads the memory controller's (cgroup.ReadOnly).
	Limits *cgroup.Limits
	// NoHeadroom fits GOMEMLIMIT to the whole limit instead of to what the
	// other processes under it leave (cgroup.Memory.Levels). The blank
	// import sets it for FITGO=headroom=off.
	NoHeadroom bool
	// UpperLimit, when positive, bounds the limit fitgo reads with one known
	// from outside, such as the pod's limit in a private cgroup namespace. 0:
	// FITGO_MEMORY_LIMIT at start-up, if set: bytes (the downward API's
	// limits.memory) or a Kubernetes quantity such as 512Mi; any other value,
	// or one that leaves less than the policy's Min, is ignored (SettingErr).
	// The others count against it as against any limit (NoHeadroom).
	UpperLimit int64
	// Reserve is memory, in bytes, held under the limit where fitgo cannot
	// see it (a sidecar in another container under a pod-level limit): it is
	// taken off the limit before the policy, as the headroom takes off what
	// it sees the others hold. 0: none; one that leaves less than the
	// policy's Min of the limit read at Apply is ignored (SettingErr). The
	// blank import sets it for FITGO=reserve=.
	Reserve int64
	// NoLeakGuard turns off the refresh's leak guard, which steps GOMEMLIMIT
	// up toward the memory limit while a growing heap pins the GC at it
	// (Result.LeakGuard). The blank import sets it for FITGO=leakguard=off.
	NoLeakGuard bool
	// NoNonGo leaves the process's own memory outside the Go runtime (cgo,
	// anonymous mmap) to the policy's ratio. By default the headroom counts
	// it with the others' (Result.NonGo): its RssAnon, less LazyFree, beyond
	// what the runtime holds resident (runtime/metrics /memory/classes).
	// NoHeadroom turns it off too. The blank import sets it for FITGO=nongo=off.
	NoNonGo bool
	// GC turns on the GC policy: at each refresh reading, GOGC is raised so
	// that the GC takes about 2 % of the CPU, where it takes more, up to a
	// heap that fills GCShare of the memory available, never beyond
	// GOMEMLIMIT nor below the program's GOGC; it stops when the program sets
	// GOGC (Result.GC). It needs a Refresh; FITGO=gc=auto sets it.
	GC bool
	// GCShare is the share of the memory available (Result.Limit) the GC
	// policy lets the heap fill, above 0 and at most 0.9; 0: 0.7. The blank
	// import sets it for FITGO=gcshare=.
	GCShare float64
	// OOMProfile, when not "", is a directory where, at the refresh reading
	// when the memory held under the limit first passes 90 % of it, a heap
	// profile and a breakdown of who holds the memory are written, evidence
	// of an OOM kill to come (docs/observability.md); Result.OOMCapture names
	// one an earlier process wrote there. It needs a Refresh; the blank
	// import sets it for FITGO=oomprofile=DIR.
	OOMProfile string

	env *env // nil: the process
}

// env is the world Apply works in: the process, or a fake in tests.
type env struct {
	knob.Env[int64]
	fsys     fs.FS            // for /proc/meminfo
	floor    func() int64     // nil: the floor from runtime/metrics
	gc       func() gcReading // nil: the leak guard's reading from runtime/metrics
	resident func() int64     // nil: what the runtime holds resident, from runtime/metrics

	cgroups fs.FS // for the memory events; nil: the real root
	gogc    *knob.Knob[int]
}

// processKnob is the process's memory limit.
var processKnob = newKnob(func() int64 { return debug.SetMemoryLimit(-1) }, debug.SetMemoryLimit)

func newKnob(get func() int64, set func(int64) int64) *knob.Knob[int64] {
	return knob.New(knob.Spec[int64]{Name: "GOMEMLIMIT", Value: "the memory limit", Limit: "memory limit", Key: "memory_limit", Pkg: "memlimit",
		Format: formatBytes, Log: logBytes}, get, set, set)
}

// memLimit is the memory limit of a reading, as Result has it.
type memLimit struct {
	bytes         int64
	source        string
	from          limitFile
	others, level int64 // Result.Others and LevelLimit
	plain         int64 // the limit without the headroom
	reserve       int64 // Result.Reserve
	nonGo         int64 // Result.NonGo
	floor         int64
	guard         leakGuard
}

func (l memLimit) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Any("bytes", logBytes(l.bytes)), slog.String("source", l.source), slog.String("from", l.from.String())}
	if l.others != 0 {
		attrs = append(attrs, slog.Any("level_limit", logBytes(l.level)), slog.Any("others", logBytes(l.others)))
	}
	if l.guard.Steps > 0 {
		attrs = append(attrs, slog.Int("leak_guard_steps", l.guard.Steps))
	}
	return slog.GroupValue(attrs...)
}

// Fit is the management of the memory limit that an Apply started.
type Fit struct {
	res  Result
	f    *knob.Fit[int64, memLimit] // nil when Apply left the limit alone for good
	env  *env
	rule rule
	loop *knob.Loop
	log  *slog.Logger

	// Used by the refresh's goroutine only: automemlimit's ratio (0: it does
	// nothing here) with its rule's text for the hard limit hard.
	ratio    float64
	hard     int64
	otherWhy string
	gc       gcPolicy
	oom      oomCapture
}

// Apply sets the Go runtime's soft memory limit (GOMEMLIMIT) from the
// effective memory limit of the process's cgroup hierarchy, by the options'
// policy. It leaves the limit alone, with the Reason in the Result, when
// GOMEMLIMIT is set in the environment (bytes or "off"), the system is not
// Linux or has no cgroup, there is no memory limit (unless SystemMemory),
// the policy leaves it unset, or it already has the value; it never clears
// a limit. It returns the error, also in the Result, when the limit cannot
// be read or the options are invalid. A later Apply takes over.
func Apply(o Options) (*Fit, error) {
	f, a := prepare(&o)
	f.startGC(&o, a.Left == "")
	f.startOOM(o.OOMProfile, o.Refresh, &f.res)
	var out knob.Outcome[int64]
	f.f, f.loop, out = a.Run(f.res.outcome(), false)
	f.res.set(out)
	if f.loop == nil {
		f.stopGC(gcNoLimit)
	}
	if f.loop == nil && f.oom.dir != "" {
		f.oom.dir, f.res.OOMCapture.Err = "", errors.New("memlimit: OOM capture: no refresh: "+f.res.Reason)
		f.res.SettingErr = errors.Join(f.res.SettingErr, f.res.OOMCapture.Err)
	}
	f.env.Knob.LogApply(o.Logger, f.res.outcome(), "result", f.res)
	return f, f.res.Err
}

// Plan reports what Apply would do with the same options, without changing
// the memory limit, starting a refresh or logging.
func Plan(o Options) (Result, error) {
	o.Logger = nil
	f, a := prepare(&o)
	_, _, out := a.Run(f.res.outcome(), true)
	f.res.set(out)
	f.readEvents(&f.res)
	return f.res, f.res.Err
}

// prepare makes the Apply of the options, with the Fit it fills in.
func prepare(o *Options) (*Fit, *knob.Apply[int64, memLimit]) {
	e := o.env
	if e == nil {
		e = &env{Env: knob.Process(processKnob, nil, "memory"), fsys: os.DirFS("/"), gogc: processGOGC}
	}
	p := o.Policy.resolved()
	f := &Fit{env: e, res: Result{Policy: p, Env: e.Getenv("GOMEMLIMIT")}, log: o.Logger,
		rule: rule{p: p, headroom: !o.NoHeadroom, nonGo: !o.NoNonGo, env: e, log: o.Logger}}
	r := &f.res
	a := &knob.Apply[int64, memLimit]{Env: &e.Env, Tick: f.tick, Insist: o.Insist, Logger: o.Logger,
		Refresh: o.Refresh, Context: o.Context, Limits: o.Limits}
	invalid, setting := f.rule.setUpper(o, e.Getenv(envvar.MemoryLimitVar))
	if o.GCShare < 0 || o.GCShare > 0.9 || o.GCShare != o.GCShare {
		invalid = cmp.Or(invalid, errors.New("memlimit: GCShare "+
			strconv.FormatFloat(o.GCShare, 'g', -1, 64)+": want above 0 and at most 0.9, or 0 for 0.7"))
	}
	switch a.Err, r.SettingErr = cmp.Or(o.Policy.validate(), invalid), setting; {
	case a.Err != nil:
		a.Left = "invalid options"
	case e.GOOS != "linux":
		a.Left = "not Linux: no cgroup limits"
	case r.Env != "": // "off" or a byte count: the runtime does not start with another
		a.Left = "GOMEMLIMIT=" + r.Env + " is set in the environment"
	}
	if o.KeepExisting {
		a.Keep = func(before int64) string {
			if before == noLimit {
				return ""
			}
			return "the memory limit is already " + formatBytes(before) + ": set by the program or a library, and kept"
		}
	}
	a.Read = func(lim cgroup.Limits, err error) knob.Reading[int64, memLimit] {
		var memErr error
		if o.SystemMemory {
			f.rule.memTotal, memErr = readMemTotal(e.fsys)
		}
		f.ratio = automemlimitRatio(e.Getenv("AUTOMEMLIMIT"))
		r.Memory = lim.Memory
		r.SettingErr = errors.Join(r.SettingErr, f.rule.check(lim, e.Getenv(envvar.MemoryLimitVar)))
		rd, _, _ := f.reading(lim, err)
		f.rule.guard.on, f.rule.readGC = !o.NoLeakGuard, !o.NoLeakGuard || o.GC // from the first tick on
		r.setLimit(rd.Limit)
		noMem := ""
		if memErr != nil {
			noMem = "; no system memory either: " + memErr.Error()
		}
		switch {
		case errors.Is(rd.Err, cgroup.ErrNoCgroup):
			rd.Why = "no cgroup information (no /proc/self/cgroup)" + noMem
		case rd.Limit.from == noFile:
			rd.Why = "no memory limit" + noMem
		default:
			rd.Why = tinyReason(p, rd.Limit)
		}
		return rd
	}
	a.Same = func(want int64) string { return "GOMEMLIMIT is already " + formatBytes(want) }
	return f, a
}

// reading is the knob's Reading of lim, read with err, at Apply and at each
// tick (whether fitgo has a value is decided here only), with the leak
// guard's event and the runtime's reading.
func (f *Fit) reading(lim cgroup.Limits, err error) (rd knob.Reading[int64, memLimit], gev guardEvent, gc gcReading) {
	// Without a cgroup, MemTotal or the upper limit is still a limit to follow.
	if rd.Err = knob.ErrFor(err, lim.Memory.Err, lim.CPU.Err, f.rule.memTotal > 0 || f.rule.upper.bytes > 0); rd.Err != nil {
		return rd, guardNone, gc
	}
	var has bool
	rd.Limit, has, rd.Want, gev, gc = f.rule.value(lim)
	rd.Has = has && rd.Want != 0
	if gev == guardStep {
		rd.Why = "by the leak guard"
	}
	rd.Other, rd.OtherWhy = f.automemlimit(lim)
	return rd, gev, gc
}

// tick fits the memory limit to a reading of the refresh loop.
func (f *Fit) tick(k *knob.Fit[int64, memLimit], now time.Time, lim cgroup.Limits, err error) bool {
	rd, gev, gc := f.reading(lim, err)
	keep := k.Step(now, rd)
	if rd.Err == nil || !keep {
		f.tuneGC(now, keep, rd.Want, rd.Has, rd.Limit, gc)
	}
	if keep {
		f.logGuard(gev, rd.Want, rd.Limit)
		f.oom.step(now, &lim, rd.Want, rd.Limit.guard.Steps)
	}
	return keep
}

// automemlimit is the value automemlimit's Set writes for a reading, and
// its rule ("" for none), whose text is made once per hard limit.
func (f *Fit) automemlimit(lim cgroup.Limits) (int64, string) {
	hard, ok := lim.MemoryMax()
	if !ok || f.ratio == 0 {
		return 0, ""
	}
	if hard != f.hard || f.otherWhy == "" {
		f.hard, f.otherWhy = hard, "automemlimit's "+strconv.FormatFloat(f.ratio, 'f', -1, 64)+" × "+formatBytes(hard)
	}
	return int64(uint64(float64(hard) * f.ratio)), f.otherWhy
}

// automemlimitRatio is the ratio automemlimit's Set applies to the hard
// limit (it ignores memory.high): AUTOMEMLIMIT when it is in (0, 1], its
// default 0.9 when unset, else 0: it does nothing ("off", invalid).
func automemlimitRatio(env string) float64 {
	if env == "" {
		return defaultRatio
	}
	if r, err := strconv.ParseFloat(env, 64); err == nil && r > 0 && r <= 1 {
		return r
	}
	return 0
}

// Status returns a snapshot of the management: the Result of Apply with
// After, the limit, Err, Reason and the memory events of now.
func (f *Fit) Status() Result {
	if f == nil {
		return Result{Before: processKnob.Current(), After: processKnob.Current(), Reason: "not applied"}
	}
	r := f.res
	out, l, ok := f.f.Fill(f.env.Knob, r.outcome())
	if r.set(out); ok {
		r.setLimit(l)
	}
	f.readEvents(&r)
	f.gcResult(&r)
	r.OOMCapture.Written = int(f.oom.written.Load())
	return r
}

// Undo ends the refresh and takes this Apply back: when it is the Apply in
// force and the limit is still fitgo's value, it goes back to the value of
// the Apply before it or, once every Apply is undone, to the value from
// before fitgo; not when someone else has changed it since. Calling it
// again does nothing.
func (f *Fit) Undo() {
	if f != nil && f.f != nil {
		f.stopGC(gcUndone)
		f.f.Undo()
	}
}

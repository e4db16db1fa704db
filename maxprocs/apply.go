package maxprocs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/internal/refresh"
)

// DefaultRefreshInterval is the interval of WithRefresh when none is given:
// one second, the cadence at which the Go runtime re-reads the CPU limit
// itself. A refresh tick re-reads already-open cgroup files and allocates
// nothing; it costs a few microseconds.
const DefaultRefreshInterval = time.Second

// runtimeGrace is how long a refresh waits, after a limit change, for the Go
// runtime's own update to reach the value fitgo wants before setting it
// itself (which would switch the runtime's updates off). The runtime checks
// about once a second.
const runtimeGrace = 2 * time.Second

// An Option configures Apply and Plan.
type Option func(*config)

// init sets the defaults.
func (c *config) init() {}

type config struct {
	policy   Policy
	logger   *slog.Logger
	refresh  bool
	keep     bool
	ctx      context.Context
	interval time.Duration
	env      *env // nil: the real process
}

// WithPolicy sets the whole policy at once; options after it change single
// fields.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithRounding chooses the rounding rule (the zero Rounding is the default).
func WithRounding(r Rounding) Option { return func(c *config) { c.policy.Rounding = r } }

// WithMin sets the smallest GOMAXPROCS to set (default 1; the Go runtime's
// own rule is Ceil with a minimum of 2). It is still capped at the CPU count.
func WithMin(n int) Option { return func(c *config) { c.policy.Min = n } }

// WithMax sets the largest GOMAXPROCS to set; 0 means no maximum.
func WithMax(n int) Option { return func(c *config) { c.policy.Max = n } }

// WithReserve subtracts cores (fractions allowed) from the CPU limit before
// rounding, to leave room for sidecars that share the limit.
func WithReserve(cores float64) Option { return func(c *config) { c.policy.Reserve = cores } }

// WithLogger makes Apply, and the refresh loop it starts, log to l: one Info
// line when GOMAXPROCS changes or when fitgo stops managing it, a Debug line
// when Apply leaves it alone, a Warn line when the CPU limit cannot be read.
// Without it, nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithKeepExisting makes Apply leave GOMAXPROCS alone when it is no longer
// the runtime's own default: when the program or a library has already
// called runtime.GOMAXPROCS (an earlier init, say). The runtime's default is
// the CPU count, or, when the runtime's own container support is on, its
// rule applied to the process's cgroup; when that cannot be predicted (a
// parent cgroup imposes the limit), Apply goes ahead. The blank import uses
// this option.
func WithKeepExisting() Option { return func(c *config) { c.keep = true } }

// WithRefresh keeps GOMAXPROCS in line with the CPU limit after Apply
// returns, re-reading the limit every interval (DefaultRefreshInterval when
// zero or negative; at least 10ms). Following stops when ctx is done (a nil
// ctx never is), when Result.Stop or Result.Undo is called, when a later
// Apply takes over, or when someone else changes GOMAXPROCS (see Status).
// Plan ignores it.
func WithRefresh(ctx context.Context, interval time.Duration) Option {
	return func(c *config) { c.refresh, c.ctx, c.interval = true, ctx, interval }
}

// env is the environment Apply works in: the real process, or a fake in tests.
type env struct {
	goos   string
	getenv func(string) string
	numCPU int
	rt     Runtime
	read   func() (cgroup.Limits, error)
	loop   *refresh.Loop
	// knob is GOMAXPROCS; fitgo owns ("pins") it when it set the current
	// value with runtime.GOMAXPROCS.
	knob *knob.Knob[int]
	// setDefault hands GOMAXPROCS back to the runtime; false when unavailable.
	setDefault func() bool
}

var processKnob = &knob.Knob[int]{
	Get: func() int { return runtime.GOMAXPROCS(0) },
	Set: func(n int) { runtime.GOMAXPROCS(n) },
}

// text is GOMAXPROCS's wording in the refresh loop's log lines.
var text = &knob.Text{
	Name:     "GOMAXPROCS",
	ReadWarn: "fitgo: cannot read the CPU limit; GOMAXPROCS unchanged",
	Changed:  "fitgo: GOMAXPROCS updated: CPU limit changed",
	Removed:  "fitgo: GOMAXPROCS updated: CPU limit removed",
	HandOver: "fitgo: GOMAXPROCS changed by someone else; fitgo stops managing it",
}

func systemEnv() *env {
	loop := refresh.Default
	return &env{
		goos:   runtime.GOOS,
		getenv: os.Getenv,
		numCPU: runtime.NumCPU(),
		rt:     systemRuntime(),
		read:   func() (cgroup.Limits, error) { return loop.Read(refresh.MaxProcs) },
		loop:   loop,
		knob:   processKnob,

		setDefault: setDefaultGOMAXPROCS,
	}
}

// Result reports what Apply did, or what Plan would do.
type Result struct {
	// Before and After are GOMAXPROCS before and after Apply.
	Before, After int
	// Changed reports whether Apply called runtime.GOMAXPROCS. For Plan: it
	// would.
	Changed bool
	// Limit is the effective CPU limit in cores that the value was derived
	// from (the tightest quota/period over the cgroup hierarchy), 0 when there
	// is none.
	Limit float64
	// Source is the cgroup directory that imposed Limit, "" when there is none.
	Source string
	// CPU is the CPU limit as read, with the process's cgroup hierarchy.
	CPU cgroup.CPU
	// NumCPU is the number of CPUs the process may run on
	// (runtime.NumCPU, the CPU affinity at start-up on Linux).
	NumCPU int
	// Policy is the policy used, with Min resolved.
	Policy Policy
	// Env is the value of the GOMAXPROCS environment variable, "" when unset.
	Env string
	// Runtime is what the Go runtime does about GOMAXPROCS by itself.
	Runtime Runtime
	// Reason says why GOMAXPROCS was left alone; "" when Changed.
	Reason string
	// Err is why the CPU limit could not be read or the options are invalid;
	// GOMAXPROCS is then untouched. Apply also returns it.
	Err error
	// Refresh is the interval at which a refresh loop follows the limit; 0
	// when none was started.
	Refresh time.Duration

	s *session
	k *knob.Knob[int]
}

// Status is the live state of the management of GOMAXPROCS that an Apply
// started.
type Status struct {
	// GOMAXPROCS is the current value.
	GOMAXPROCS int
	// Following reports whether the refresh loop still follows the CPU limit.
	Following bool
	// Updates counts the changes the refresh loop made.
	Updates int
	// LastUpdate is the time of the last change it made.
	LastUpdate time.Time
	// Limit and Source are the CPU limit and the directory that imposed it at
	// the last reading.
	Limit  float64
	Source string
	// Err is the error of the last reading, nil when it succeeded.
	Err error
	// Reason says why following stopped, e.g. "GOMAXPROCS was changed from 1
	// to 4 outside fitgo". "" while following.
	Reason string
}

// session is one Apply's management of GOMAXPROCS: the shared state
// machine, and what it needs to know about CPU limits and the runtime.
type session struct {
	knob.Session[int]
	env    *env
	policy Policy

	// Refresh state, guarded by the knob's lock.
	limit     float64
	hasLimit  bool
	source    string
	changedAt time.Time // when the limit last changed
	rtDef     int       // the runtime's predicted default for the current limit
	rtPrev    int       // and for the previous one
}

// Apply sets GOMAXPROCS from the effective CPU limit of the process's cgroup
// hierarchy, following the policy given by the options (by default: the
// limit rounded down, at least 1, at most the CPU count).
//
// It leaves GOMAXPROCS alone, with the Reason in the Result, when:
// the GOMAXPROCS environment variable holds a value the runtime honours (an
// integer > 0; other values are ignored, as by the runtime); the system is
// not Linux or has no cgroup information; there is no CPU limit; or the
// value is already right. In the last case it does not call
// runtime.GOMAXPROCS, because with Go 1.25 and later that call switches off
// the runtime's own updates.
//
// When the limit cannot be read (a malformed cgroup file) or the options are
// invalid, Apply leaves GOMAXPROCS alone and returns the error, which is also
// in the Result.
//
// Apply is safe to call more than once and from several goroutines; a later
// call takes over from an earlier one, whose refresh loop stops. Result.Undo
// restores the previous state.
func Apply(opts ...Option) (Result, error) {
	return apply(opts, false)
}

// Plan reports what Apply would do with the same options, reading the same
// limits and environment, without changing GOMAXPROCS or starting a refresh
// loop: After is the value Apply would set and Changed whether it would call
// runtime.GOMAXPROCS. Undo, Stop and Status do nothing on its Result.
func Plan(opts ...Option) (Result, error) {
	return apply(opts, true)
}

func apply(opts []Option, dry bool) (Result, error) {
	var cfg config
	cfg.init()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	// Logging happens after the knob's lock is released, so that a handler
	// may call back into this package (Status, say) without a deadlock.
	r := applyLocked(&cfg, dry)
	logApply(cfg.logger, &r)
	return r, r.Err
}

// applyLocked is Apply under the knob's lock.
func applyLocked(cfg *config, dry bool) Result {
	e := cfg.env
	if e == nil {
		e = systemEnv()
	}
	k := e.knob
	r := Result{
		k:       k,
		NumCPU:  e.numCPU,
		Policy:  cfg.policy.resolved(),
		Env:     e.getenv("GOMAXPROCS"),
		Runtime: e.rt,
	}

	k.Lock()
	defer k.Unlock()
	r.Before = k.Get()
	r.After = r.Before

	if err := cfg.policy.Validate(); err != nil {
		r.Err = err
		r.Reason = "invalid options"
		return r
	}
	if e.goos != "linux" {
		r.Reason = "not Linux: no cgroup limits"
		return r
	}
	if n, ok := envvar.GOMAXPROCS(r.Env); ok {
		r.Reason = "GOMAXPROCS=" + strconv.Itoa(n) + " is set in the environment"
		return r
	}

	s := &session{env: e, policy: r.Policy}
	// This Apply takes over from any earlier one.
	s.Begin(k, s, text, cfg.logger, r.Before, !dry)
	fitgoOwned := s.BeforeOwned()
	if !dry {
		r.s = s
	}

	lim, err, follow := s.Read(cfg.refresh && !dry, e.loop, e.read, cfg.ctx, cfg.interval, refresh.MaxProcs)
	if errors.Is(err, cgroup.ErrNoCgroup) {
		r.Reason = "no cgroup information (no /proc/self/cgroup)"
		s.SetReason(r.Reason)
		return r
	}

	r.CPU = lim.CPU
	q, hasLimit := lim.CPUQuota()
	if hasLimit {
		r.Limit, r.Source = q, lim.CPU.Source
	}
	s.limit, s.hasLimit, s.source = q, hasLimit, lim.CPU.Source
	s.rtDef = e.rt.runtimeDefault(lim, e.numCPU)
	s.rtPrev = s.rtDef

	if def := s.rtDef; cfg.keep && !fitgoOwned && def > 0 && r.Before != def && cpuErr(lim, err) == nil {
		r.Reason = "GOMAXPROCS is already " + strconv.Itoa(r.Before) + ", not the runtime's default " + strconv.Itoa(def) +
			": set by the program or a library, and kept"
		s.End(r.Reason)
		return r
	}

	switch cerr := cpuErr(lim, err); {
	case cerr != nil:
		r.Err = fmt.Errorf("maxprocs: reading the CPU limit: %w", cerr)
		r.Reason = "the CPU limit cannot be read"
		s.SetErr(cerr)
	case !hasLimit:
		r.Reason = "no CPU limit"
	default:
		want := r.Policy.Procs(q, e.numCPU)
		if want == r.Before {
			r.Reason = sameReason(want, q, e.numCPU, e.rt)
			break
		}
		r.After, r.Changed = want, true
		if !dry {
			k.Own(r.Before, want)
		}
	}

	if follow {
		r.Refresh = s.Follow(cfg.interval, DefaultRefreshInterval)
	}
	return r
}

// cpuErr picks from a reading the error that concerns the CPU limit: a
// malformed memory file does not stop GOMAXPROCS.
func cpuErr(lim cgroup.Limits, err error) error {
	if err == nil {
		return nil
	}
	if lim.CPU.Err != nil {
		return lim.CPU.Err
	}
	if lim.Memory.Err != nil {
		return nil
	}
	return err
}

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

// Tick is the refresh loop's call with a new reading.
func (s *session) Tick(now time.Time, lim cgroup.Limits, err error) bool {
	keep := s.tick(now, lim, err)
	s.Flush()
	return keep
}

// tick observes the reading under the knob's lock and hands the
// rest to the shared state machine: the reading's error about the CPU limit
// or, for a good reading, the GOMAXPROCS the policy gives for its CPU limit
// (none without a limit). A new CPU limit, and the runtime's default for it,
// are recorded at once: they tell the runtime's own updates from someone
// else's changes.
func (s *session) tick(now time.Time, lim cgroup.Limits, err error) bool {
	k := s.env.knob
	k.Lock()
	defer k.Unlock()
	if s.Stopped() {
		return false
	}
	cerr := cpuErr(lim, err)
	q, has := lim.CPUQuota()
	if cerr != nil {
		return s.Step(now, 0, false, cerr)
	}
	if q != s.limit || has != s.hasLimit || lim.CPU.Source != s.source {
		s.limit, s.hasLimit, s.source = q, has, lim.CPU.Source
		s.changedAt = now
		s.rtPrev, s.rtDef = s.rtDef, s.env.rt.runtimeDefault(lim, s.env.numCPU)
	}
	if !has {
		return s.Step(now, 0, false, nil)
	}
	return s.Step(now, s.policy.Procs(q, s.env.numCPU), true, nil)
}

// Commit: tick has recorded the reading already.
func (s *session) Commit() {}

// Adopt accepts the runtime's own update, which fitgo was leaving to it.
func (s *session) Adopt(cur int) bool {
	return s.env.rt.Updates && (cur == s.rtDef || cur == s.rtPrev)
}

// Defer waits, for a while after a limit change, when the runtime is about
// to make the same change by itself.
func (s *session) Defer(now time.Time, want int) bool {
	return s.env.rt.Updates && s.rtDef == want && now.Sub(s.changedAt) < runtimeGrace
}

// HandOverReason is the Status reason when someone else changed GOMAXPROCS.
func (s *session) HandOverReason(from, cur int) string {
	return fmt.Sprintf("GOMAXPROCS was changed from %d to %d outside fitgo; no longer managed", from, cur)
}

// UpdatedArgs are the log arguments of a change the refresh loop made.
func (s *session) UpdatedArgs(from int) []any {
	return []any{"GOMAXPROCS", s.env.knob.Get(), "before", from,
		slog.Group("cpu_limit", "cores", s.limit, "source", s.source)}
}

// Restore puts GOMAXPROCS back to what it would be without fitgo: the
// runtime's default (and, where enabled, its own updates) with Go 1.25 and
// later, else the value before the session's Apply. The knob's lock is held.
func (s *session) Restore() {
	k := s.env.knob
	if !s.env.setDefault() {
		k.Set(s.Before())
	}
	k.Disown(k.Get())
}

// Undo stops following the CPU limit and restores GOMAXPROCS to its state
// before Apply: with Go 1.25 and later, the runtime's default
// (runtime.SetDefaultGOMAXPROCS), so that the runtime's own updates resume
// where they are enabled; before Go 1.25, the value Before. It restores
// nothing when fitgo did not change GOMAXPROCS, when someone else has changed
// it since, or when a later Apply manages it. Calling it again does nothing.
func (r Result) Undo() {
	if r.s != nil {
		r.s.Undo()
	}
}

// Stop stops following the CPU limit, leaving GOMAXPROCS as it is. Calling
// it again does nothing.
func (r Result) Stop() {
	if r.s != nil {
		r.s.Stop()
	}
}

// Status returns the live state of the management this Apply started. For a
// Result without a refresh loop it reports the current GOMAXPROCS only.
func (r Result) Status() Status {
	s := r.s
	if s == nil {
		st := Status{Limit: r.Limit, Source: r.Source, Err: r.Err, Reason: r.Reason}
		k := r.k
		if k == nil {
			k = processKnob // a Result made by hand, such as the root package's when disabled
		}
		st.GOMAXPROCS = k.Current()
		return st
	}
	k := s.env.knob
	k.Lock()
	defer k.Unlock()
	ks := s.State()
	st := Status{
		GOMAXPROCS: ks.Value,
		Following:  ks.Following,
		Updates:    ks.Updates,
		LastUpdate: ks.LastUpdate,
		Err:        ks.Err,
		Reason:     ks.Reason,
	}
	if s.hasLimit {
		st.Limit, st.Source = s.limit, s.source
	}
	return st
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
	if l == nil {
		return
	}
	switch {
	case r.Err != nil:
		l.Warn("fitgo: GOMAXPROCS left alone: "+r.Reason, "result", *r)
	case r.Changed:
		l.Info("fitgo: GOMAXPROCS set", "result", *r)
	default:
		l.Debug("fitgo: GOMAXPROCS left alone: "+r.Reason, "result", *r, "runtime", r.Runtime.Why)
	}
}

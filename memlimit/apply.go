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
	"github.com/fitgo/fitgo/internal/refresh"
)

// DefaultRefreshInterval is the interval of WithRefresh when none is given:
// one second. A refresh tick re-reads already-open cgroup files and
// allocates nothing; it costs a few microseconds.
const DefaultRefreshInterval = time.Second

// NoLimit is the value of the Go runtime's memory limit when there is none
// (debug.SetMemoryLimit's default, and GOMEMLIMIT=off).
const NoLimit int64 = math.MaxInt64

// An Option configures Apply and Plan.
type Option func(*config)

// init sets the defaults.
func (c *config) init() { c.policy = DefaultPolicy() }

type config struct {
	policy    Policy
	logger    *slog.Logger
	refresh   bool
	ctx       context.Context
	interval  time.Duration
	sysMemory bool
	keep      bool
	env       *env // nil: the real process
}

// WithPolicy sets the whole policy at once; options after it change single
// fields.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithRatio sets the fraction of the memory limit to use, in (0, 1]
// (default 0.9).
func WithRatio(r float64) Option { return func(c *config) { c.policy.Ratio = r } }

// WithReserve keeps bytes free below the memory limit: GOMEMLIMIT is then
// the lower of ratio × limit and limit − bytes. WithRatio(1) with a reserve
// uses the reserve alone.
func WithReserve(bytes int64) Option { return func(c *config) { c.policy.Reserve = bytes } }

// WithMinLimit sets the smallest GOMEMLIMIT to set (default 16 MiB); a
// smaller result leaves GOMEMLIMIT unset. It never raises the limit.
// WithMinLimit(0) sets any positive result.
func WithMinLimit(bytes int64) Option { return func(c *config) { c.policy.MinLimit = bytes } }

// WithSystemMemory uses the machine's total memory (MemTotal in
// /proc/meminfo) as the limit when the cgroup hierarchy has none. Off by
// default: without a container limit, a soft limit at 90% of the machine's
// memory is a guess about what else runs there.
func WithSystemMemory() Option { return func(c *config) { c.sysMemory = true } }

// WithKeepExisting makes Apply leave the memory limit alone when it is
// already set (not NoLimit) by the program or a library, through
// debug.SetMemoryLimit (an earlier init, say). The blank import uses this
// option.
func WithKeepExisting() Option { return func(c *config) { c.keep = true } }

// WithLogger makes Apply, and the refresh loop it starts, log to l: one Info
// line when GOMEMLIMIT changes or when fitgo stops managing it, a Debug line
// when Apply leaves it alone, a Warn line when the memory limit cannot be
// read. Without it, nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithRefresh keeps GOMEMLIMIT in line with the memory limit after Apply
// returns, re-reading the limit every interval (DefaultRefreshInterval when
// zero or negative; at least 10ms). Following stops when ctx is done (a nil
// ctx never is), when Result.Stop or Result.Undo is called, when a later
// Apply takes over, or when someone else changes the memory limit (see
// Status). Plan ignores it.
func WithRefresh(ctx context.Context, interval time.Duration) Option {
	return func(c *config) { c.refresh, c.ctx, c.interval = true, ctx, interval }
}

// env is the environment Apply works in: the real process, or a fake in tests.
type env struct {
	goos   string
	getenv func(string) string
	fsys   fs.FS // for /proc/meminfo
	read   func() (cgroup.Limits, error)
	loop   *refresh.Loop
	// knob is the runtime's memory limit; its Orig is the value before
	// fitgo set it.
	knob *knob.Knob[int64]
}

var processKnob = &knob.Knob[int64]{
	Get: func() int64 { return debug.SetMemoryLimit(-1) },
	Set: func(n int64) { debug.SetMemoryLimit(n) },
}

// text is GOMEMLIMIT's wording in the refresh loop's log lines.
var text = &knob.Text{
	Name:     "GOMEMLIMIT",
	ReadWarn: "fitgo: cannot read the memory limit; GOMEMLIMIT unchanged",
	Changed:  "fitgo: GOMEMLIMIT updated: memory limit changed",
	Removed:  "fitgo: GOMEMLIMIT updated: memory limit removed or too small",
	HandOver: "fitgo: GOMEMLIMIT changed by someone else; fitgo stops managing it",
}

func systemEnv() *env {
	loop := refresh.Default
	return &env{
		goos:   runtime.GOOS,
		getenv: os.Getenv,
		fsys:   os.DirFS("/"),
		read:   func() (cgroup.Limits, error) { return loop.Read(refresh.MemLimit) },
		loop:   loop,
		knob:   processKnob,
	}
}

// Result reports what Apply did, or what Plan would do.
type Result struct {
	// Before and After are the runtime's memory limit (GOMEMLIMIT) before
	// and after Apply, in bytes; NoLimit when there is none.
	Before, After int64
	// Changed reports whether Apply called debug.SetMemoryLimit. For Plan: it
	// would.
	Changed bool
	// Limit is the memory limit in bytes the value was derived from: the
	// tightest memory.max (v2) or memory.limit_in_bytes (v1) over the cgroup
	// hierarchy, or memory.high when lower, or with WithSystemMemory the
	// machine's MemTotal. 0 when there is none.
	Limit int64
	// Source is the cgroup directory that imposed Limit, or "/proc/meminfo";
	// "" when there is no limit.
	Source string
	// From names the setting Limit comes from: "memory.max", "memory.high",
	// "memory.limit_in_bytes" or "MemTotal".
	From string
	// Memory is the memory limit as read, with the process's cgroup
	// hierarchy.
	Memory cgroup.Memory
	// Policy is the policy used.
	Policy Policy
	// Env is the value of the GOMEMLIMIT environment variable, "" when unset.
	Env string
	// Reason says why the memory limit was left alone; "" when Changed.
	Reason string
	// Err is why the memory limit could not be read or the options are
	// invalid; GOMEMLIMIT is then untouched. Apply also returns it.
	Err error
	// Refresh is the interval at which a refresh loop follows the limit; 0
	// when none was started.
	Refresh time.Duration

	s *session
	k *knob.Knob[int64]
}

// Status is the live state of the management of GOMEMLIMIT that an Apply
// started.
type Status struct {
	// GOMEMLIMIT is the runtime's current memory limit; NoLimit when none.
	GOMEMLIMIT int64
	// Following reports whether the refresh loop still follows the limit.
	Following bool
	// Updates counts the changes the refresh loop made.
	Updates int
	// LastUpdate is the time of the last change it made.
	LastUpdate time.Time
	// Limit, Source and From describe the memory limit at the last reading.
	Limit  int64
	Source string
	From   string
	// Err is the error of the last reading, nil when it succeeded.
	Err error
	// Reason says why following stopped, e.g. "the memory limit was changed
	// from 460.8 MiB to 1 GiB outside fitgo". "" while following.
	Reason string
}

// session is one Apply's management of the memory limit: the shared state
// machine, and what it needs to know about memory limits.
type session struct {
	knob.Session[int64]
	env      *env
	policy   Policy
	memTotal int64 // MemTotal when WithSystemMemory, else 0

	// Refresh state, guarded by the knob's lock: the memory limit of the
	// last good reading, and of the one being observed.
	limit, next        int64
	source, nextSource string
	from, nextFrom     string
}

// target is the limit a reading leads to: the effective limit, where it
// comes from, and the GOMEMLIMIT the policy gives (0: leave unset).
func (s *session) target(m cgroup.Memory, lim cgroup.Limits) (limit int64, source, from string, want int64) {
	limit, source, from = effective(m, lim, s.memTotal)
	if limit > 0 {
		want = s.policy.Limit(limit)
	}
	return limit, source, from, want
}

// effective picks the limit from a reading: the lower of memory.max and
// memory.high where set, else MemTotal when given.
func effective(m cgroup.Memory, lim cgroup.Limits, memTotal int64) (limit int64, source, from string) {
	if max, ok := lim.MemoryMax(); ok {
		limit, source, from = max, m.MaxSource, "memory.max"
		if m.Version == cgroup.V1 {
			from = "memory.limit_in_bytes"
		}
	}
	if high, ok := lim.MemoryHigh(); ok && (limit == 0 || high < limit) {
		limit, source, from = high, m.HighSource, "memory.high"
	}
	if limit == 0 && memTotal > 0 {
		limit, source, from = memTotal, "/proc/meminfo", "MemTotal"
	}
	return limit, source, from
}

// Apply sets the Go runtime's soft memory limit (GOMEMLIMIT) from the
// effective memory limit of the process's cgroup hierarchy: by default 90%
// of the lower of memory.max and memory.high, left unset when that would be
// under 16 MiB.
//
// It leaves the memory limit alone, with the Reason in the Result, when the
// GOMEMLIMIT environment variable is set (a byte count or "off", parsed as
// the runtime parses it), when the system is not Linux or has no cgroup
// information, when there is no memory limit (unless WithSystemMemory), when
// the policy leaves it unset, and when it already has the value. It never
// sets the runtime's memory limit to NoLimit: it cannot clear a limit the
// program set.
//
// When the memory limit cannot be read (a malformed cgroup file) or the
// options are invalid, Apply leaves it alone and returns the error, which is
// also in the Result.
//
// Apply is safe to call more than once and from several goroutines; a later
// call takes over from an earlier one, whose refresh loop stops. Result.Undo
// restores the previous value.
func Apply(opts ...Option) (Result, error) {
	return apply(opts, false)
}

// Plan reports what Apply would do with the same options, reading the same
// limits and environment, without changing the memory limit or starting a
// refresh loop: After is the value Apply would set and Changed whether it
// would call debug.SetMemoryLimit. Undo, Stop and Status do nothing on its
// Result.
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
	r := Result{k: k, Policy: cfg.policy, Env: e.getenv("GOMEMLIMIT")}

	k.Lock()
	defer k.Unlock()
	r.Before = k.Get()
	r.After = r.Before

	if err := cfg.policy.Validate(); err != nil {
		r.Err, r.Reason = err, "invalid options"
		return r
	}
	if e.goos != "linux" {
		r.Reason = "not Linux: no cgroup limits"
		return r
	}
	switch _, kind := envvar.GOMEMLIMIT(r.Env); kind {
	case envvar.MemLimitOff, envvar.MemLimitBytes:
		r.Reason = "GOMEMLIMIT=" + r.Env + " is set in the environment"
		return r
	}
	if cfg.keep && r.Before != NoLimit && !k.Owns(r.Before) {
		r.Reason = "the memory limit is already " + formatBytes(r.Before) + ": set by the program or a library, and kept"
		return r
	}

	s := &session{env: e, policy: r.Policy}
	// This Apply takes over from any earlier one.
	s.Begin(k, s, text, cfg.logger, r.Before, !dry)
	if !dry {
		r.s = s
	}

	var memErr error
	if cfg.sysMemory {
		s.memTotal, memErr = readMemTotal(e.fsys)
	}

	lim, err, follow := s.Read(cfg.refresh && !dry, e.loop, e.read, cfg.ctx, cfg.interval, refresh.MemLimit)
	noCgroup := errors.Is(err, cgroup.ErrNoCgroup)
	if noCgroup && s.memTotal == 0 {
		r.Reason = "no cgroup information (no /proc/self/cgroup)"
		if memErr != nil {
			r.Reason += "; no system memory either: " + memErr.Error()
		}
		s.SetReason(r.Reason)
		return r
	}

	r.Memory = lim.Memory
	limit, source, from, want := s.target(lim.Memory, lim)
	s.limit, s.source, s.from = limit, source, from
	if limit > 0 {
		r.Limit, r.Source, r.From = limit, source, from
	}

	switch merr := memoryErr(lim, err); {
	case merr != nil && !noCgroup:
		r.Err = fmt.Errorf("memlimit: reading the memory limit: %w", merr)
		r.Reason = "the memory limit cannot be read"
		s.SetErr(merr)
	case limit == 0:
		r.Reason = "no memory limit"
		if cfg.sysMemory && memErr != nil {
			r.Reason += "; no system memory either: " + memErr.Error()
		}
	case want == 0:
		r.Reason = tinyReason(r.Policy, limit)
	case want == r.Before:
		r.Reason = "GOMEMLIMIT is already " + formatBytes(want)
	default:
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

func tinyReason(p Policy, limit int64) string {
	raw := p.raw(limit)
	if raw <= 0 {
		return "the reserve (" + formatBytes(p.Reserve) + ") leaves nothing of the " + formatBytes(limit) + " limit"
	}
	return formatBytes(raw) + " (from a " + formatBytes(limit) + " limit) is below the minimum of " +
		formatBytes(p.MinLimit) + ": too little for the heap next to the runtime's own memory; GOMEMLIMIT left unset"
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

// memoryErr picks from a reading the error that concerns the memory limit:
// a malformed CPU file does not stop GOMEMLIMIT.
func memoryErr(lim cgroup.Limits, err error) error {
	if err == nil {
		return nil
	}
	if lim.Memory.Err != nil {
		return lim.Memory.Err
	}
	if lim.CPU.Err != nil {
		return nil
	}
	return err
}

// Tick is the refresh loop's call with a new reading.
func (s *session) Tick(now time.Time, lim cgroup.Limits, err error) bool {
	keep := s.tick(now, lim, err)
	s.Flush()
	return keep
}

// tick observes the reading under the knob's lock and hands the
// rest to the shared state machine: the reading's error about the memory
// limit or, for a good reading, the GOMEMLIMIT the policy gives; none when
// there is no limit or it is too small. Commit records its limit.
func (s *session) tick(now time.Time, lim cgroup.Limits, err error) bool {
	k := s.env.knob
	k.Lock()
	defer k.Unlock()
	if s.Stopped() {
		return false
	}
	if merr := memoryErr(lim, err); merr != nil {
		return s.Step(now, 0, false, merr)
	}
	var want int64
	s.next, s.nextSource, s.nextFrom, want = s.target(lim.Memory, lim)
	return s.Step(now, want, want != 0, nil)
}

// Commit records the memory limit of the reading last observed.
func (s *session) Commit() { s.limit, s.source, s.from = s.next, s.nextSource, s.nextFrom }

// Adopt: the runtime never changes its memory limit by itself, so any
// change is someone else's.
func (s *session) Adopt(int64) bool { return false }

// Defer: there is nothing to wait for.
func (s *session) Defer(time.Time, int64) bool { return false }

// HandOverReason is the Status reason when someone else changed the memory
// limit.
func (s *session) HandOverReason(from, cur int64) string {
	return "the memory limit was changed from " + formatBytes(from) + " to " + formatBytes(cur) + " outside fitgo; no longer managed"
}

// UpdatedArgs are the log arguments of a change the refresh loop made.
func (s *session) UpdatedArgs(from int64) []any {
	return []any{"GOMEMLIMIT", s.env.knob.Last(), "before", from,
		slog.Group("memory_limit", "bytes", s.limit, "source", s.source, "from", s.from)}
}

// Restore puts back the value from before fitgo set it; the knob's lock is
// held.
func (s *session) Restore() {
	k := s.env.knob
	k.Set(k.Orig())
	k.Disown(k.Orig())
}

// Undo stops following the memory limit and restores the runtime's memory
// limit to its value before Apply. It restores nothing when fitgo did not
// change it, when someone else has changed it since, or when a later Apply
// is in force. Calling it again does nothing.
func (r Result) Undo() {
	if r.s != nil {
		r.s.Undo()
	}
}

// Stop stops following the memory limit, leaving it as it is. Calling it
// again does nothing.
func (r Result) Stop() {
	if r.s != nil {
		r.s.Stop()
	}
}

// Status returns the live state of the management this Apply started.
func (r Result) Status() Status {
	s := r.s
	if s == nil {
		st := Status{Limit: r.Limit, Source: r.Source, From: r.From, Err: r.Err, Reason: r.Reason}
		k := r.k
		if k == nil {
			k = processKnob // a Result made by hand, such as the root package's when disabled
		}
		st.GOMEMLIMIT = k.Current()
		return st
	}
	k := s.env.knob
	k.Lock()
	defer k.Unlock()
	ks := s.State()
	return Status{
		GOMEMLIMIT: ks.Value,
		Following:  ks.Following,
		Updates:    ks.Updates,
		LastUpdate: ks.LastUpdate,
		Limit:      s.limit,
		Source:     s.source,
		From:       s.from,
		Err:        ks.Err,
		Reason:     ks.Reason,
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
	if l == nil {
		return
	}
	switch {
	case r.Err != nil:
		l.Warn("fitgo: GOMEMLIMIT left alone: "+r.Reason, "result", *r)
	case r.Changed:
		l.Info("fitgo: GOMEMLIMIT set", "result", *r)
	default:
		l.Debug("fitgo: GOMEMLIMIT left alone: "+r.Reason, "result", *r)
	}
}

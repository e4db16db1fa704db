package knob

import (
	"context"
	"io/fs"
	"log/slog"
	"runtime"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
)

// Env is the world an Apply works in: the process, or a fake in tests.
type Env[V comparable] struct {
	GOOS   string
	Getenv func(string) string // the start-up environment
	Knob   *Knob[V]
	Read   func() (cgroup.Limits, error)
	Open   func() (Source, error)
	Ticks  <-chan time.Time // the refresh loop's ticks; nil: a ticker
}

// Process is the Env of the process for k, whose Apply reads the limits of
// its controller in fsys (nil: the real root) with cgroup.ReadOnly.
func Process[V comparable](k *Knob[V], fsys fs.FS, controller string) Env[V] {
	read := func() (cgroup.Limits, error) { return cgroup.ReadOnly(fsys, controller) }
	return Env[V]{GOOS: runtime.GOOS, Getenv: envvar.Startup(), Knob: k, Read: read, Open: OpenProcess}
}

// Limits returns the limits to fit: *given, or a reading.
func (e *Env[V]) Limits(given *cgroup.Limits) (cgroup.Limits, error) {
	if given != nil {
		return *given, nil
	}
	return e.Read()
}

// Outcome is what an Apply did for the knob, or what Plan would do, and
// then the live state of its Fit: the part of a package's Result that the
// knob fills in, given and returned as a value.
type Outcome[V comparable] struct {
	Before, After      V
	Changed, Following bool
	Reason             string
	Err                error
	SettingErr         error // a setting from the environment that was ignored; nil: none
	Refresh            time.Duration
	Updates            int
	LastUpdate         time.Time
}

// Decision is an Apply's decision once it has read the limits: Decide
// returns the outcome for the knob's value o.Before (mine: fitgo set it), and
// false to leave the knob alone for good; the Fit records Limit and Err, and
// follows the limit every Refresh (when positive) when Follow.
type Decision[V comparable, D any] struct {
	Decide  func(o Outcome[V], mine bool) (Outcome[V], bool)
	Limit   D
	Err     error
	Follow  bool
	Insist  bool
	Logger  *slog.Logger
	Refresh time.Duration
	Context context.Context
}

func (d *Decision[V, D]) follows() bool { return d.Follow && d.Refresh > 0 }

// Plan decides for the knob's value now, and reports whether to start a Fit
// (a nil Decision does not, and leaves o as it is).
func (d *Decision[V, D]) Plan(k *Knob[V], o Outcome[V]) (Outcome[V], bool) {
	if d == nil {
		return o, false
	}
	before, mine := k.Peek()
	o.Before, o.After, o.Changed, o.Reason, o.Err = before, before, false, "", nil
	return d.Decide(o, mine)
}

// Settle starts the Fit of the decision, deciding again when the value
// changes first. step is the package's reading of a tick, given the Fit.
func (d *Decision[V, D]) Settle(e *Env[V], o Outcome[V], step Step[V, D]) (*Fit[V, D], *Loop, Outcome[V]) {
	for {
		o, ok := d.Plan(e.Knob, o)
		if !ok {
			return nil, nil, o
		}
		if f, ok := Start(e.Knob, d, o); ok {
			if !d.follows() {
				return f, nil, o
			}
			l := f.Join(d.Context, d.Refresh, e.Open, e.Ticks, step)
			o.Refresh, o.Following = l.Every(), true
			return f, l, o
		}
	}
}

// Fill returns o with the live state of f (which may be nil: Apply left the
// knob alone), and the last good reading.
func (f *Fit[V, D]) Fill(k *Knob[V], o Outcome[V]) (Outcome[V], D, bool) {
	if f == nil {
		o.After = k.Current()
		var none D
		return o, none, false
	}
	st := f.State()
	o.After, o.Following, o.Updates, o.LastUpdate = st.Value, st.Following, st.Updates, st.LastUpdate
	if st.Following {
		o.Err = st.Err
	}
	if why := f.Why(st); why != "" {
		o.Reason = why
	}
	return o, st.Limit, true
}

// Summary is the one-line String of a Result: limit describes the limit
// ("" for none), policy the policy.
func (k *Knob[V]) Summary(o Outcome[V], limit, policy string) string {
	s := k.txt.Name + " " + k.txt.Format(o.Before)
	if o.Changed {
		s += " -> " + k.txt.Format(o.After)
	} else {
		s += " (unchanged: " + o.Reason + ")"
	}
	if limit != "" {
		s += "; " + limit
	}
	if o.SettingErr != nil {
		s += "; " + o.SettingErr.Error()
	}
	s += "; policy " + policy
	if o.Err != nil {
		s += "; error: " + o.Err.Error()
	}
	return s
}

// LogValue is the LogValue of a Result: its shared fields around mid, the
// package's own.
func LogValue[V comparable](o Outcome[V], mid ...slog.Attr) slog.Value {
	attrs := append([]slog.Attr{slog.Any("before", o.Before), slog.Any("after", o.After),
		slog.Bool("changed", o.Changed)}, mid...)
	if o.SettingErr != nil {
		attrs = append(attrs, slog.String("setting_err", o.SettingErr.Error()))
	}
	if o.Reason != "" {
		attrs = append(attrs, slog.String("reason", o.Reason))
	}
	if o.Err != nil {
		attrs = append(attrs, slog.String("err", o.Err.Error()))
	}
	if o.Refresh > 0 {
		attrs = append(attrs, slog.String("refresh", o.Refresh.String()))
	}
	return slog.GroupValue(attrs...)
}

// LogApply logs the outcome of an Apply: Warn for an error, Info for a
// change, Debug when the value was left alone; and Warn for an ignored
// setting.
func (k *Knob[V]) LogApply(l *slog.Logger, o Outcome[V], args ...any) {
	if l != nil && o.SettingErr != nil {
		l.Warn("fitgo: " + o.SettingErr.Error())
	}
	switch {
	case l == nil:
	case o.Err != nil:
		l.Warn("fitgo: "+k.txt.Name+" left alone: "+o.Reason, args...)
	case o.Changed:
		l.Info("fitgo: "+k.txt.Name+" set", args...)
	default:
		l.Debug("fitgo: "+k.txt.Name+" left alone: "+o.Reason, args...)
	}
}

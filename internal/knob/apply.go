package knob

import (
	"context"
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

// Process is the Env of the process for k.
func Process[V comparable](k *Knob[V]) Env[V] {
	return Env[V]{GOOS: runtime.GOOS, Getenv: envvar.Startup(), Knob: k, Read: cgroup.Read, Open: OpenProcess}
}

// Limits returns the limits to fit: *given, or a reading.
func (e *Env[V]) Limits(given *cgroup.Limits) (cgroup.Limits, error) {
	if given != nil {
		return *given, nil
	}
	return e.Read()
}

// Out points at the fields of a package's Result that the knob fills in.
type Out[V comparable] struct {
	Before, After      *V
	Changed, Following *bool
	Reason             *string
	Err                *error
	SettingErr         *error // a setting from the environment that was ignored; nil: none
	Refresh            *time.Duration
	Updates            *int
	LastUpdate         *time.Time
}

// Decision is an Apply's decision once it has read the limits: Decide fills
// out for the knob's value before (mine: fitgo set it) and reports false to
// leave the knob alone for good; the Fit records Limit and Err, and follows
// the limit every Refresh (when positive) when Follow.
type Decision[V comparable, D any] struct {
	Decide  func(before V, mine bool) bool
	Limit   D
	Err     error
	Follow  bool
	Insist  bool
	Logger  *slog.Logger
	Refresh time.Duration
	Context context.Context
}

// Plan decides for the knob's value now, and reports whether to start a Fit
// (a nil Decision does not).
func (d *Decision[V, D]) Plan(k *Knob[V], out Out[V]) bool {
	if d == nil {
		return false
	}
	before, mine := k.Peek()
	*out.Before, *out.After, *out.Changed, *out.Reason, *out.Err = before, before, false, "", nil
	return d.Decide(before, mine)
}

// Settle starts the Fit of the decision, deciding again when the value
// changes first. step is the package's reading of a tick, given the Fit.
func (d *Decision[V, D]) Settle(e *Env[V], out Out[V], step Step[V, D]) (*Fit[V, D], *Loop) {
	for d.Plan(e.Knob, out) {
		follow := d.Follow && d.Refresh > 0
		if f, ok := Start(e.Knob, d.Logger, *out.Before, *out.After, *out.Changed, follow, d.Limit, d.Err); ok {
			f.setInsist(d.Insist)
			if !follow {
				return f, nil
			}
			l := f.Join(d.Context, d.Refresh, e.Open, e.Ticks, step)
			*out.Refresh, *out.Following = l.Every(), true
			return f, l
		}
	}
	return nil, nil
}

// Fill fills out with the live state of f (which may be nil: Apply left the
// knob alone) and returns the last good reading.
func (f *Fit[V, D]) Fill(k *Knob[V], out Out[V]) (D, bool) {
	if f == nil {
		*out.After = k.Current()
		var none D
		return none, false
	}
	st := f.State()
	*out.After, *out.Following, *out.Updates, *out.LastUpdate = st.Value, st.Following, st.Updates, st.LastUpdate
	if st.Following {
		*out.Err = st.Err
	}
	if why := f.Why(st); why != "" {
		*out.Reason = why
	}
	return st.Limit, true
}

// Summary is the one-line String of a Result: limit describes the limit
// ("" for none), policy the policy.
func (k *Knob[V]) Summary(out Out[V], limit, policy string) string {
	s := k.txt.Name + " " + k.txt.Format(*out.Before)
	if *out.Changed {
		s += " -> " + k.txt.Format(*out.After)
	} else {
		s += " (unchanged: " + *out.Reason + ")"
	}
	if limit != "" {
		s += "; " + limit
	}
	if out.SettingErr != nil && *out.SettingErr != nil {
		s += "; " + (*out.SettingErr).Error()
	}
	s += "; policy " + policy
	if *out.Err != nil {
		s += "; error: " + (*out.Err).Error()
	}
	return s
}

// LogValue is the LogValue of a Result: its shared fields around mid, the
// package's own.
func LogValue[V comparable](out Out[V], mid ...slog.Attr) slog.Value {
	attrs := append([]slog.Attr{slog.Any("before", *out.Before), slog.Any("after", *out.After),
		slog.Bool("changed", *out.Changed)}, mid...)
	if out.SettingErr != nil && *out.SettingErr != nil {
		attrs = append(attrs, slog.String("setting_err", (*out.SettingErr).Error()))
	}
	if *out.Reason != "" {
		attrs = append(attrs, slog.String("reason", *out.Reason))
	}
	if *out.Err != nil {
		attrs = append(attrs, slog.String("err", (*out.Err).Error()))
	}
	if *out.Refresh > 0 {
		attrs = append(attrs, slog.String("refresh", out.Refresh.String()))
	}
	return slog.GroupValue(attrs...)
}

// LogApply logs the outcome of an Apply: Warn for an error, Info for a
// change, Debug when the value was left alone; and Warn for an ignored
// setting.
func (k *Knob[V]) LogApply(l *slog.Logger, out Out[V], args ...any) {
	if l != nil && out.SettingErr != nil && *out.SettingErr != nil {
		l.Warn("fitgo: " + (*out.SettingErr).Error())
	}
	switch {
	case l == nil:
	case *out.Err != nil:
		l.Warn("fitgo: "+k.txt.Name+" left alone: "+*out.Reason, args...)
	case *out.Changed:
		l.Info("fitgo: "+k.txt.Name+" set", args...)
	default:
		l.Debug("fitgo: "+k.txt.Name+" left alone: "+*out.Reason, args...)
	}
}

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

// Options are the options both packages share.
type Options struct {
	Insist  bool
	Logger  *slog.Logger
	Refresh time.Duration
	Context context.Context
	Limits  *cgroup.Limits
}

// Limits returns the limits to fit: o.Limits, or a reading.
func (e *Env[V]) Limits(o Options) (cgroup.Limits, error) {
	if o.Limits != nil {
		return *o.Limits, nil
	}
	return e.Read()
}

// Out points at the fields of a package's Result that the knob fills in.
type Out[V comparable] struct {
	Before, After      *V
	Changed, Following *bool
	Reason             *string
	Err                *error
	Refresh            *time.Duration
	Updates            *int
	LastUpdate         *time.Time
}

// Settle decides and starts the Fit of an Apply. decide fills out for the
// knob's value before (mine: fitgo set it) and returns final to leave the
// knob alone for good; when the value changes before the Fit starts, it
// decides again. The Fit follows the limit with step when follow; it is nil
// when dry or final.
func Settle[V comparable, D any](e *Env[V], o Options, out Out[V], dry, follow bool, limit D, err error,
	decide func(before V, mine bool) (final bool), step func(time.Time, cgroup.Limits, error) bool) (*Fit[V, D], *Loop) {
	for {
		before, mine := e.Knob.Peek()
		*out.Before, *out.After, *out.Changed, *out.Reason, *out.Err = before, before, false, "", nil
		if decide(before, mine) || dry {
			return nil, nil
		}
		if f, ok := Start(e.Knob, o.Logger, before, *out.After, *out.Changed, follow, limit, err); ok {
			f.insist = o.Insist // before the refresh starts
			if !follow {
				return f, nil
			}
			l := f.Join(o.Context, o.Refresh, e.Open, e.Ticks, step)
			*out.Refresh, *out.Following = l.Every(), true
			return f, l
		}
	}
}

// Fill fills out with the live state of f (which may be nil: Apply left the
// knob alone) and returns the last good reading. format writes a value.
func (f *Fit[V, D]) Fill(k *Knob[V], out Out[V], format func(V) string) (D, bool) {
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
	if why := f.Why(st, format); why != "" {
		*out.Reason = why
	}
	return st.Limit, true
}

// Summary is the one-line String of a Result: limit describes the limit
// ("" for none), policy the policy.
func Summary[V comparable](name string, out Out[V], format func(V) string, limit, policy string) string {
	s := name + " " + format(*out.Before)
	if *out.Changed {
		s += " -> " + format(*out.After)
	} else {
		s += " (unchanged: " + *out.Reason + ")"
	}
	if limit != "" {
		s += "; " + limit
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
// change, Debug when the value was left alone.
func LogApply[V comparable](l *slog.Logger, name string, out Out[V], args ...any) {
	switch {
	case l == nil:
	case *out.Err != nil:
		l.Warn("fitgo: "+name+" left alone: "+*out.Reason, args...)
	case *out.Changed:
		l.Info("fitgo: "+name+" set", args...)
	default:
		l.Debug("fitgo: "+name+" left alone: "+*out.Reason, args...)
	}
}

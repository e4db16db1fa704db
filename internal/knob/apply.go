package knob

import (
	"context"
	"errors"
	"fmt"
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

// Outcome is the part of a package's Result that the knob fills in: what
// an Apply did, or Plan would do, then the live state of its Fit.
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

// Apply is one Apply, or Plan, of a knob as its package prepares it, with
// the options every knob's package has (documented there). Run decides for
// every knob in the same way, in this order: Left, the options and the
// environment, leaves the knob alone before any reading; Keep
// (KeepExisting) keeps a value fitgo did not set; a reading with no cgroup
// or no value gives None; a reading's error is the Apply's; a value that
// is already Want gives Same; else the value is set. Read is the package's
// reading of the limits at Apply, Tick its reading at each refresh.
type Apply[V comparable, D any] struct {
	Env     *Env[V]
	Insist  bool
	Logger  *slog.Logger
	Refresh time.Duration
	Context context.Context
	Limits  *cgroup.Limits // nil: Env reads them
	Left    string
	Err     error // the options' error, with Left
	Keep    func(before V) string
	Read    func(lim cgroup.Limits, err error) Reading[V, D]
	Same    func(want V) string
	// Tick is the package's reading at each refresh tick; the refresh may
	// run it before Run returns, so it gets the Fit rather than finding it
	// where the package stores it.
	Tick func(f *Fit[V, D], now time.Time, lim cgroup.Limits, err error) bool
}

// Run runs the Apply over o, the package's Result part: it starts the Fit
// (nil when the knob is left alone) and its refresh Loop (nil: none), or
// with plan only decides.
func (a *Apply[V, D]) Run(o Outcome[V], plan bool) (*Fit[V, D], *Loop, Outcome[V]) {
	k, txt := a.Env.Knob, &a.Env.Knob.txt
	o.Before, o.After, o.Reason, o.Err = k.Current(), k.Current(), a.Left, a.Err
	if a.Left != "" {
		return nil, nil, o
	}
	var lim cgroup.Limits
	var err error
	if a.Limits == nil {
		lim, err = a.Env.Read()
	} else {
		lim = *a.Limits
	}
	rd := a.Read(lim, err)
	for {
		before, mine := k.peek()
		o.Before, o.After, o.Changed, o.Reason, o.Err = before, before, false, "", nil
		if a.Keep != nil && !mine {
			if o.Reason = a.Keep(before); o.Reason != "" {
				return nil, nil, o
			}
		}
		switch {
		case errors.Is(rd.Err, cgroup.ErrNoCgroup) || rd.Err == nil && !rd.Has:
			o.Reason = rd.Why
		case rd.Err != nil:
			o.Err = fmt.Errorf("%s: reading the %s: %w", txt.Pkg, txt.Limit, rd.Err)
			o.Reason = "the " + txt.Limit + " cannot be read"
		case rd.Want == before:
			o.Reason = a.Same(rd.Want)
		default:
			o.After, o.Changed = rd.Want, true
		}
		if plan {
			return nil, nil, o
		}
		f, ok := a.Start(&rd, o)
		if !ok {
			continue // the value changed: decide again
		}
		if !f.following() {
			return f, nil, o
		}
		l := f.join(a)
		o.Refresh, o.Following = l.every, true
		return f, l, o
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
	if why := f.why(st); why != "" {
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
func (k *Knob[V]) LogValue(o Outcome[V], mid ...slog.Attr) slog.Value {
	attrs := append([]slog.Attr{{Key: "before", Value: k.txt.Log(o.Before)}, {Key: "after", Value: k.txt.Log(o.After)},
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

// LogApply logs the outcome of an Apply: Warn for an error or an ignored
// setting, Info for a change, Debug when the value was left alone.
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

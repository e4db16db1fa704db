package knob

import (
	"context"
	"log/slog"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// start is Start for a decision to set want (when change) and to follow the
// limit (when follow), with no limit and no error.
func start[V comparable](k *Knob[V], log *slog.Logger, before, want V, change, follow bool) (*Fit[V, string], bool) {
	a := &Apply[V, string]{Env: &Env[V]{Knob: k}, Logger: log}
	if follow {
		a.Refresh = time.Second
	}
	return a.Start(&Reading[V, string]{}, Outcome[V]{Before: before, After: want, Changed: change})
}

// setInsist makes the Fit put its value back over someone else's change
// (on) or hand the knob over (off), as Start does for Options.Insist.
func (f *Fit[V, D]) setInsist(on bool) {
	f.k.mu.Lock()
	f.insist = on
	f.k.mu.Unlock()
}

// joinWith is join for an Apply of these options.
func (f *Fit[V, D]) joinWith(ctx context.Context, every time.Duration, open func() (Source, error), ticks <-chan time.Time,
	step func(f *Fit[V, D], now time.Time, lim cgroup.Limits, err error) bool) *Loop {
	return f.join(&Apply[V, D]{Env: &Env[V]{Open: open, Ticks: ticks}, Context: ctx, Refresh: every, Tick: step})
}

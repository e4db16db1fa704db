package knob

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// Fit is one Apply's management of a knob. D describes a reading of the
// limit (for Status and log lines).
type Fit[V comparable, D any] struct {
	k   *Knob[V]
	log *slog.Logger
	e   *entry[V]

	// Guarded by k.mu.
	st      State[V, D] // but Value
	logs    coalescer[V]
	release func() bool // the context's AfterFunc
	wake    func()      // tells the refresh loop that the Fit stopped
	insist  bool        // put fitgo's value back when someone else changes it
	fresh   bool        // no reading has seen fitgo's value since fitgo set it
	odd     time.Time   // since when readings find a value fitgo did not set (Spec.Confirm); zero: none
}

// Start begins the Fit of a that read o.Before (with peek) and decided, from
// the reading rd, to set o.After (when o.Changed) or to leave the value
// alone; the Fit follows the limit when there is a cgroup and a refresh. It
// fails, doing nothing, when the value is no longer o.Before: the caller
// decides again. The Fit supersedes any earlier one.
func (a *Apply[V, D]) Start(rd *Reading[V, D], o Outcome[V]) (*Fit[V, D], bool) {
	k := a.Env.Knob
	k.mu.Lock()
	defer k.mu.Unlock()
	cur := k.get()
	if cur != o.Before {
		return nil, false
	}
	if !(k.owned && cur == k.last) {
		// The value is not fitgo's: earlier Applies have nothing to undo.
		k.owned, k.last, k.stack = false, cur, nil
	}
	if o.Changed {
		if _, ok := k.write(cur, o.After); !ok {
			return nil, false
		}
	}
	follow := a.Refresh > 0 && !errors.Is(rd.Err, cgroup.ErrNoCgroup)
	f := &Fit[V, D]{k: k, log: a.Logger, st: State[V, D]{Following: follow, Limit: rd.Limit, Err: rd.Err}, insist: a.Insist, fresh: true}
	if a := k.active; a != nil {
		a.supersede()
	}
	f.e = &entry[V]{value: k.get(), mine: k.owned, supersede: func() { f.stopLocked("superseded by a later Apply") },
		yield: func() { f.Stop("superseded by a later Apply"); f.Undo() }}
	k.stack, k.active = append(k.stack, f.e), f.e
	return f, true
}

// following reports whether the Fit still follows the limit.
func (f *Fit[V, D]) following() bool {
	f.k.mu.Lock()
	defer f.k.mu.Unlock()
	return f.st.Following
}

// Moved returns the runtime's value and whether it is no longer the one
// fitgo last saw: someone else, or the runtime itself, changed it.
func (f *Fit[V, D]) Moved() (V, bool) {
	k := f.k
	k.mu.Lock()
	defer k.mu.Unlock()
	cur := k.get()
	return cur, cur != k.last
}

// Reading is what one reading of the limits calls for.
type Reading[V comparable, D any] struct {
	Err   error // the limit cannot be read: change nothing
	Limit D     // the limit read
	Want  V     // the value the policy gives for it
	Has   bool  // false: none (no limit): put back the state from before fitgo
	// Other is the value another library's rule gives, OtherWhy names it
	// ("" for none): a change to it right after fitgo set the value is
	// likely that library's.
	Other    V
	OtherWhy string
	Why      string // what a change is for, "by the leak guard" ("": the limit changed); at Apply without Has, why there is none
	// Runtime: the runtime updates the value by itself. Then Adopt are values
	// it may have set, which are accepted rather than handed over; Seen is
	// the value the reading was computed for: if the runtime's value has
	// changed since (its own update racing the tick), the step is left to the
	// next reading. Wait leaves a change to the runtime for now, while fitgo
	// has not set the value. Default: Want is the runtime's own default,
	// which restore puts back along with the runtime's own updates.
	Runtime, Wait, Default bool
	Adopt                  [2]V
	Seen                   V
}

// Step applies a reading taken at now, and reports whether the Fit still
// follows the limit. Its switch is the one table of who changed the value.
func (f *Fit[V, D]) Step(now time.Time, r Reading[V, D]) bool {
	k := f.k
	k.mu.Lock()
	if !f.st.Following {
		k.mu.Unlock()
		return false
	}
	if r.Err == nil {
		f.st.Limit = r.Limit // a good reading, whoever's the value is
	}
	var put, ev event
	for cur, first := k.get(), true; ; first = false {
		switch {
		case r.Runtime && cur != r.Seen: // the runtime's own update raced the reading: left to the next
		case cur == k.last:
			f.odd = time.Time{}
			ev = f.step(now, cur, &r)
		case r.Runtime && !k.owned && (cur == r.Adopt[0] || cur == r.Adopt[1]):
			k.last = cur // the runtime's own update
			ev = f.step(now, cur, &r)
		case f.insist && first: // someone else's change: put fitgo's value back, and judge again
			put, cur = f.reassert(cur, &r), k.get()
			continue
		case !f.insist: // someone else's change: hand the knob over, once confirmed
			ev = f.foreign(now, k.last, cur, f.other(cur, &r))
		} // else another write raced the put-back: left to the next reading
		break
	}
	keep := f.st.Following
	k.mu.Unlock()
	f.emit(put)
	f.emit(ev)
	return keep
}

// other is the likely other library that set cur, or ""; the lock is held.
func (f *Fit[V, D]) other(cur V, r *Reading[V, D]) string {
	if f.fresh && r.OtherWhy != "" && cur == r.Other {
		return r.OtherWhy
	}
	return ""
}

// reassert puts fitgo's value back over cur, someone else's; it logs the
// first time. The lock is held.
func (f *Fit[V, D]) reassert(cur V, r *Reading[V, D]) event {
	k := f.k
	mine, by := k.last, f.other(cur, r)
	var ok bool
	if r.Runtime && r.Default && mine == r.Want {
		_, ok = k.putBack(cur)
	} else {
		_, ok = k.write(cur, mine)
	}
	if !ok {
		return event{} // another write raced: the next reading sees it
	}
	f.e.value, f.e.mine = k.last, k.owned
	f.st.From, f.st.To, f.st.By, f.fresh = mine, cur, by, true
	if f.st.Kept++; f.st.Kept > 1 {
		return event{}
	}
	return event{level: slog.LevelInfo, msg: "fitgo: " + f.k.txt.Name + " changed by someone else; fitgo puts its value back (insist)",
		args: f.changeArgs(mine, cur, by)}
}

// step fits the value cur, fitgo's, to r; the lock is held.
func (f *Fit[V, D]) step(now time.Time, cur V, r *Reading[V, D]) event {
	k := f.k
	f.fresh = false
	if r.Err != nil {
		first := f.st.Err == nil
		f.st.Err = r.Err
		if first {
			return event{level: slog.LevelWarn, msg: "fitgo: cannot read the " + f.k.txt.Limit + "; " + f.k.txt.Name + " not fitted until it can",
				args: []any{f.k.txt.Name, f.k.txt.Log(cur), "err", r.Err}}
		}
		return event{}
	}
	f.st.Err, f.st.Limit = nil, r.Limit
	switch {
	case !r.Has && k.owned:
		got, ok := k.putBack(cur)
		if !ok {
			return f.handOver(cur, got, "")
		}
		return f.changed(now, cur, got, removed)
	case !r.Has || r.Want == cur || !k.owned && r.Runtime && r.Wait:
		return f.flush(now, cur)
	}
	got, ok := k.write(cur, r.Want)
	if !ok {
		return f.foreign(now, cur, got, "")
	}
	return f.changed(now, cur, got, r.Why)
}

// changed records a change the refresh made for why (Reading.Why, or
// removed); the lock is held.
func (f *Fit[V, D]) changed(now time.Time, from, to V, why string) event {
	f.e.value, f.e.mine = to, f.k.owned
	f.st.Updates++
	f.st.LastUpdate, f.fresh = now, true
	if f.logs.held == 0 {
		f.logs.from = from
	}
	f.logs.held++
	f.logs.why = why
	return f.flush(now, to)
}

// foreign is a reading's finding of cur, a value fitgo did not set, over
// from: handed over once Spec.Confirm has passed since the first; the lock
// is held.
func (f *Fit[V, D]) foreign(now time.Time, from, cur V, by string) event {
	if c := f.k.txt.Confirm; c > 0 && (f.odd.IsZero() || now.Sub(f.odd) < c) {
		if f.odd.IsZero() {
			f.odd = now
		}
		return event{}
	}
	return f.handOver(from, cur, by)
}

// handOver gives up the knob to whoever set cur over from (by: the likely
// other library); the lock is held.
func (f *Fit[V, D]) handOver(from, cur V, by string) event {
	k := f.k
	f.stopLocked("")
	f.st.HandedOver, f.st.From, f.st.To, f.st.By = true, from, cur, by
	k.owned, k.last, k.stack = false, cur, nil
	return event{level: slog.LevelInfo, msg: "fitgo: " + f.k.txt.Name + " changed by someone else; fitgo stops managing it",
		args: f.changeArgs(cur, from, by)}
}

// Stop stops following for reason, leaving the value as it is.
func (f *Fit[V, D]) Stop(reason string) {
	f.k.mu.Lock()
	f.stopLocked(reason)
	f.k.mu.Unlock()
}

func (f *Fit[V, D]) stopLocked(reason string) {
	if !f.st.Following {
		return
	}
	f.st.Following, f.st.Reason = false, reason
	if f.k.active == f.e {
		f.k.active = nil
	}
	if f.release != nil {
		f.release()
	}
	if f.wake != nil {
		f.wake()
	}
}

// Undo stops following and takes this Apply off the undo stack. When it was
// the Apply in force and fitgo's value is still the runtime's, the value
// goes back to the Apply's before it or, at the bottom, to the state from
// before fitgo: Undo in any order, each once, gives that state back; again,
// it does nothing.
func (f *Fit[V, D]) Undo() {
	k := f.k
	k.mu.Lock()
	f.stopLocked("undone")
	i := slices.Index(k.stack, f.e)
	if i < 0 {
		k.mu.Unlock()
		return // undone already, or the value has not been fitgo's since
	}
	k.stack = slices.Delete(k.stack, i, i+1)
	var ev event
	if cur := k.get(); i == len(k.stack) && k.owned && cur == k.last {
		if n := len(k.stack); n > 0 && k.stack[n-1].mine {
			if v := k.stack[n-1].value; v != cur {
				if got, ok := k.write(cur, v); !ok {
					ev = f.handOver(cur, got, "")
				}
			}
		} else if got, ok := k.putBack(cur); !ok {
			ev = f.handOver(cur, got, "")
		}
	}
	k.mu.Unlock()
	f.emit(ev)
}

// State is the live state of a Fit.
type State[V comparable, D any] struct {
	Value      V // the runtime's current value
	Following  bool
	Reason     string // why following stopped, "" when handed over
	HandedOver bool   // someone else changed the value From To
	From, To   V      // the hand-over, or the last put-back of fitgo's From over To
	By         string // the likely other library that set To
	Kept       int    // put-backs
	Err        error  // of the last reading
	Limit      D      // the last good reading
	Updates    int
	LastUpdate time.Time
}

// join makes a following Fit of a a member of the Loop that a.Context
// carries (see WithLoop) or, without one, of a new Loop of its own, and
// returns the Loop. The Fit stops when a.Context is done.
func (f *Fit[V, D]) join(a *Apply[V, D]) *Loop {
	ctx, tick, l := a.Context, a.Tick, LoopOf(a.Context)
	if l == nil {
		l = NewLoop(a.Refresh, a.Env.Open, a.Env.Ticks)
	}
	f.k.mu.Lock()
	f.wake = l.wake
	if ctx != nil { // AfterFunc calls stop in a goroutine of its own
		f.release = context.AfterFunc(ctx, func() { f.Stop("stopped: " + context.Cause(ctx).Error()) })
	}
	f.k.mu.Unlock()
	l.add(func(now time.Time, lim cgroup.Limits, err error) bool { return tick(f, now, lim, err) }, f.following)
	if !f.following() {
		l.wake() // superseded or stopped before it joined
	}
	return l
}

// State returns the Fit's live state.
func (f *Fit[V, D]) State() State[V, D] {
	f.k.mu.Lock()
	defer f.k.mu.Unlock()
	st := f.st
	st.Value = f.k.get()
	return st
}

// Package knob is the state machine that fitgo's two runtime knobs
// (GOMAXPROCS in maxprocs, the memory limit in memlimit) share: who owns the
// current value, the session an Apply starts (its refresh subscription, its
// hand-over when someone else changes the value, Stop, Undo in LIFO order,
// the state Status reports) and the log lines of the refresh loop, written
// once the knob's lock is released.
//
// What differs between the knobs, the policy, the reading of the limit, how a
// value is put back and the wording of the reasons, stays in their packages,
// behind Hooks.
package knob

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/refresh"
)

// Knob is one runtime setting with fitgo's knowledge about it.
type Knob[V comparable] struct {
	// Get and Set read and write the runtime's value.
	Get func() V
	Set func(V)

	// The lock serialises Apply, Undo, Stop and refresh ticks.
	sync.Mutex

	active *Session[V] // the session managing the knob, if any
	owned  bool        // the current value was set by fitgo
	last   V           // the value fitgo set or, when not owned, last accepted
	orig   V           // the value before fitgo set it
	seq    int         // counts Applies
	gen    int         // the Apply whose state is current, for Undo
}

// Current returns the runtime's value, under the knob's lock.
func (k *Knob[V]) Current() V {
	k.Lock()
	defer k.Unlock()
	return k.Get()
}

// Owns reports whether v is a value fitgo set and still owns; the lock is
// held.
func (k *Knob[V]) Owns(v V) bool { return k.owned && k.last == v }

// Own sets v, which fitgo then owns; cur is the value the caller read under
// the same hold of the lock, remembered as Orig when fitgo did not own it.
// The lock is held.
func (k *Knob[V]) Own(cur, v V) {
	if !k.owned {
		k.orig = cur
	}
	k.Set(v)
	k.owned, k.last = true, v
}

// Orig is the value before fitgo set it (see Own); the lock is held.
func (k *Knob[V]) Orig() V { return k.orig }

// Last is the value fitgo set or, when it does not own the value, last
// accepted; the lock is held.
func (k *Knob[V]) Last() V { return k.last }

// Disown records v as the current value, not fitgo's; the lock is held.
func (k *Knob[V]) Disown(v V) { k.owned, k.last = false, v }

// Text is a knob's wording in the refresh loop's log lines.
type Text struct {
	Name     string // the knob's name and log key, e.g. "GOMAXPROCS"
	ReadWarn string // Warn message when the limit cannot be read
	Changed  string // Info message when a limit change changed the value
	Removed  string // Info message when the value went back (limit gone)
	HandOver string // Info message when someone else changed the value
}

// Hooks are the knob-specific parts of a session, implemented by the
// knob's package. Apart from Tick, they run with the knob's lock held.
type Hooks[V comparable] interface {
	// Tick is the refresh loop's call with a new reading (see Session.Step):
	// the package reads the reading in place, since it is large and a tick
	// must stay cheap.
	refresh.Subscriber
	// Commit records, for Status, the good reading that the package's Tick
	// observed, once fitgo is known to still manage the value.
	Commit()
	// Adopt reports whether cur, a value fitgo did not set and had not seen,
	// is the runtime's own update, to accept rather than hand over.
	Adopt(cur V) bool
	// Defer reports whether to leave the change to want, on a value fitgo
	// does not own, to the runtime for now.
	Defer(now time.Time, want V) bool
	// Restore puts back the value from before fitgo and disowns it.
	Restore()
	// HandOverReason is the Status reason when someone else changed the
	// value from from to cur.
	HandOverReason(from, cur V) string
	// UpdatedArgs are the arguments of the log line of a change the refresh
	// loop made from from.
	UpdatedArgs(from V) []any
}

// Session is one Apply's management of a knob. The knob's package embeds it
// in its own session type, which implements Hooks.
type Session[V comparable] struct {
	k    *Knob[V]
	h    Hooks[V]
	text *Text
	log  *slog.Logger
	sub  *refresh.Subscription

	stopCtx func() bool // releases the context's AfterFunc

	before      V    // the value before Apply
	beforeOwned bool // and whether fitgo had set it (an earlier Apply)
	gen         int  // this Apply's generation
	prevGen     int  // and the one it replaced

	// Refresh state, guarded by the knob's lock.
	ev      event // the log line of the last tick, written by Flush
	stopped bool
	reason  string
	updates int
	lastAt  time.Time
	err     error
}

// Begin starts the session of an Apply that found the value before; the
// lock is held. With take (not a dry run) the session takes over the knob
// from any earlier one.
func (s *Session[V]) Begin(k *Knob[V], h Hooks[V], text *Text, log *slog.Logger, before V, take bool) {
	s.k, s.h, s.text, s.log = k, h, text, log
	s.before, s.beforeOwned = before, k.Owns(before)
	if !take {
		return
	}
	if k.active != nil {
		k.active.stop("superseded by a later Apply")
	}
	if !s.beforeOwned {
		// The current value is not (or no longer) one fitgo set.
		k.owned, k.last = false, before
	}
	k.seq++
	s.gen, s.prevGen = k.seq, k.gen
	k.gen = s.gen
}

// Before is the value before Apply; BeforeOwned whether fitgo had set it.
func (s *Session[V]) Before() V         { return s.before }
func (s *Session[V]) BeforeOwned() bool { return s.beforeOwned }

// Read takes the reading of Apply: with follow, by subscribing to loop (the
// subscription also ends when ctx, if not nil, is done), else with read.
// following reports whether the session now follows the limit.
func (s *Session[V]) Read(follow bool, loop *refresh.Loop, read func() (cgroup.Limits, error),
	ctx context.Context, interval time.Duration, which refresh.Knob) (lim cgroup.Limits, err error, following bool) {
	if follow {
		s.sub, lim, err = loop.Subscribe(nil, s.h, interval, which)
		follow = s.sub != nil
		if follow && ctx != nil {
			k := s.k
			s.stopCtx = context.AfterFunc(ctx, func() {
				k.Lock()
				defer k.Unlock()
				s.stop("stopped: " + context.Cause(ctx).Error())
			})
		}
	} else {
		lim, err = read()
	}
	if !follow {
		s.stopped, s.reason = true, "no refresh requested"
	}
	return lim, err, follow
}

// Follow makes the session the knob's manager and returns the interval at
// which it follows the limit; the lock is held.
func (s *Session[V]) Follow(interval, def time.Duration) time.Duration {
	s.k.active = s
	if interval > 0 {
		return max(interval, refresh.MinInterval)
	}
	return def
}

// Stopped reports whether the session no longer follows; the lock is held.
func (s *Session[V]) Stopped() bool { return s.stopped }

// SetReason records why the session does not follow; the lock is held.
func (s *Session[V]) SetReason(reason string) { s.reason = reason }

// SetErr records the error of the last reading; the lock is held.
func (s *Session[V]) SetErr(err error) { s.err = err }

// End stops the session for reason, or records reason when it never
// followed; the lock is held.
func (s *Session[V]) End(reason string) {
	if s.stopped {
		s.reason = reason
		return
	}
	s.stop(reason) // also ends the subscription and the context's AfterFunc
}

// stop ends the session's management; the lock is held.
func (s *Session[V]) stop(reason string) {
	if s.stopped {
		return
	}
	s.stopped, s.reason = true, reason
	if s.k.active == s {
		s.k.active = nil
	}
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.sub.Cancel()
}

// event is a log line to write once the knob's lock is released.
type event struct {
	level slog.Level
	msg   string
	args  []any
}

// Flush writes the log line of the last Step, if any, to the session's
// logger. The caller does not hold the lock, so that a handler may call back
// into the knob's package (Status, say).
func (s *Session[V]) Flush() {
	if s.log == nil {
		return // Step records no log lines
	}
	s.k.Lock()
	ev := s.ev
	s.ev = event{}
	s.k.Unlock()
	if ev.msg != "" {
		s.log.Log(context.Background(), ev.level, ev.msg, ev.args...)
	}
}

// Step is a refresh tick, done by the package's Tick in three steps: under
// the knob's lock, and only while the session follows (not Stopped), the
// package observes the reading: the error that concerns this knob (kerr,
// nil when the reading is good for it) and, for a good reading, the value
// it calls for (want; ok false when it calls for none: the limit is gone).
// Then Step does the rest and returns whether to keep receiving readings;
// its log line is written by Flush once the lock is released.
func (s *Session[V]) Step(now time.Time, want V, ok bool, kerr error) bool {
	k := s.k
	cur := k.Get()
	if cur != k.last {
		if !k.owned && s.h.Adopt(cur) {
			// The runtime's own update, which fitgo was leaving to it.
			k.last = cur
		} else {
			s.handOver(cur)
			return false
		}
	}

	if kerr != nil {
		if s.err == nil && s.log != nil {
			s.ev = event{slog.LevelWarn, s.text.ReadWarn, []any{s.text.Name, cur, "err", kerr}}
		}
		s.err = kerr
		return true
	}
	s.err = nil

	s.h.Commit()
	if !ok {
		if k.owned {
			// The limit is gone: the value goes back to what it would be
			// without fitgo.
			s.h.Restore()
			s.updated(now, cur, s.text.Removed)
		}
		return true
	}
	if want == cur {
		return true
	}
	if !k.owned && s.h.Defer(now, want) {
		return true
	}
	k.Own(cur, want)
	s.updated(now, cur, s.text.Changed)
	return true
}

// updated counts a change made by the refresh loop; the lock is held.
func (s *Session[V]) updated(now time.Time, from V, msg string) {
	s.updates++
	s.lastAt = now
	if s.log != nil {
		s.ev = event{slog.LevelInfo, msg, s.h.UpdatedArgs(from)}
	}
}

// handOver gives up the knob to whoever changed it; the lock is held.
func (s *Session[V]) handOver(cur V) {
	k := s.k
	from := k.last
	s.stop(s.h.HandOverReason(from, cur))
	k.owned, k.last = false, cur
	if s.log != nil {
		s.ev = event{slog.LevelInfo, s.text.HandOver, []any{s.text.Name, cur, "was", from}}
	}
}

// Undo stops the session and puts back the value from before its Apply:
// the value an earlier Apply had set, else what Hooks.Restore puts back. It
// restores nothing when fitgo does not own the current value or a later
// Apply is in force; Applies are undone in LIFO order. Calling it again
// does nothing.
func (s *Session[V]) Undo() {
	k := s.k
	k.Lock()
	defer k.Unlock()
	s.stop("undone")
	if k.gen != s.gen {
		return // a later Apply is in force, or this one was undone
	}
	k.gen = s.prevGen
	if !k.owned || k.Get() != k.last {
		return // fitgo did not set the current value
	}
	if s.beforeOwned {
		// An earlier Apply had set the value before this one.
		k.Set(s.before)
		k.last = s.before
		return
	}
	s.h.Restore()
}

// Stop stops following, leaving the value as it is. Calling it again does
// nothing.
func (s *Session[V]) Stop() {
	s.k.Lock()
	defer s.k.Unlock()
	s.stop("stopped")
}

// State is the live state of a session.
type State[V comparable] struct {
	Value      V         // the runtime's current value
	Following  bool      // the session still follows the limit
	Updates    int       // changes the refresh loop made
	LastUpdate time.Time // time of the last one
	Err        error     // error of the last reading
	Reason     string    // why following stopped
}

// State returns the session's live state; the lock is held.
func (s *Session[V]) State() State[V] {
	return State[V]{
		Value:      s.k.Get(),
		Following:  !s.stopped,
		Updates:    s.updates,
		LastUpdate: s.lastAt,
		Err:        s.err,
		Reason:     s.reason,
	}
}

// Package knob is the core behind fitgo's three runtime knobs: GOMAXPROCS
// (maxprocs), the memory limit and GOGC (memlimit, whose GC policy steps
// GOGC at the memory limit's readings). The packages keep the policies: an
// Apply (apply.go) is decided here, the same way for every knob, and at
// every reading a package gives its Fit a Reading, the value the limits call
// for.
//
// A Knob is in one of four states. Not owned: the value is not fitgo's; Start
// moves to owned when it sets one. Owned: fitgo set the runtime's value
// (last); each Apply is an entry on the undo stack, the newest in force, and
// its refresh (Step) moves the value with the limit; Undo walks back down the
// stack and, at the bottom, puts back the state from before fitgo (not owned).
// Handed over: someone else changed the value (not the runtime's own update),
// for Spec.Confirm at least (GOGC's usual read passes through -1): the Fit
// stops, the stack is dropped and the Knob is not owned until a later Apply.
// Insisting: an owned Knob whose Fit puts its value back over such a change
// instead (Options.Insist). One table in Step tells these changes apart at
// each reading. Knob.mu guards the Knob and the live fields of its Fits; a
// helper that needs it held ends in Locked or says "the lock is held". No
// lock is held across a call into another package but the runtime's getter
// and setter; log lines are written after the lock is released. A Loop's
// own mutex guards its members only, never across a step.
package knob

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// Knob is one runtime setting and what fitgo knows about its value.
type Knob[V comparable] struct {
	txt Spec[V]
	get func() V
	set func(V) V // sets and returns the previous value
	// restore puts back the state from before fitgo, whose value was orig,
	// and returns the value it replaced.
	restore func(orig V) V

	mu     sync.Mutex
	owned  bool // the current value is one fitgo set
	last   V    // that value or, when not owned, the value fitgo last saw
	orig   V    // the value before fitgo set one
	stack  []*entry[V]
	active *entry[V] // the Fit in force, whose refresh may change the value
}

// entry is one Apply on the undo stack.
type entry[V comparable] struct {
	value     V    // the value this Apply left in force (updated by its refresh)
	mine      bool // and fitgo had set it
	supersede func()
	yield     func() // stop and undo the Apply, giving its value back
}

// New returns a Knob over a runtime setting.
func New[V comparable](txt Spec[V], get func() V, set func(V) V, restore func(orig V) V) *Knob[V] {
	if txt.Log == nil {
		txt.Log = func(v V) slog.Value { return slog.AnyValue(v) }
	}
	return &Knob[V]{txt: txt, get: get, set: set, restore: restore}
}

// Current returns the runtime's value.
func (k *Knob[V]) Current() V { v, _ := k.peek(); return v }

// peek returns the runtime's value and whether fitgo set it.
func (k *Knob[V]) peek() (cur V, mine bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur = k.get()
	return cur, k.owned && cur == k.last
}

// write sets want over cur, the value read under the same hold of the lock.
// When the runtime's previous value is not cur, someone wrote in between: it
// puts that value back and returns it with false. The lock is held.
func (k *Knob[V]) write(cur, want V) (V, bool) {
	if prev := k.set(want); prev != cur {
		k.set(prev)
		return prev, false
	}
	if !k.owned {
		k.orig = cur
	}
	k.owned, k.last = true, want
	return want, true
}

// putBack restores the state from before fitgo over cur, unless someone
// wrote in between (then as write). The lock is held.
func (k *Knob[V]) putBack(cur V) (V, bool) {
	if prev := k.restore(k.orig); prev != cur {
		k.set(prev)
		return prev, false
	}
	k.owned, k.last = false, k.get()
	return k.last, true
}

// Spec is a knob's wording in log lines and reasons, and its one rule of
// its own: Confirm.
type Spec[V comparable] struct {
	Name   string // "GOMAXPROCS", also the log key of the value
	Value  string // "GOMAXPROCS", "the memory limit": the value in reasons
	Limit  string // "CPU limit", the limit in messages
	Key    string // "cpu_limit", the log key of the limit
	Pkg    string // "maxprocs", the package in errors
	Format func(V) string
	// Log is a value as log lines give it; nil: the value itself.
	Log func(V) slog.Value
	// Confirm is how long readings must find a value fitgo did not set
	// before it counts as someone else's (0: at once). GOGC's usual read,
	// SetGCPercent(-1) and back, shows -1 until a GC's mark ends.
	Confirm time.Duration
}

// ErrFor picks from a reading's error err the part that concerns one
// controller, whose own error is own and the other's other: a malformed file
// of the other controller does not stop this one. No cgroup at all is an
// error only when the knob has nothing to follow without one (beyond: false).
func ErrFor(err, own, other error, beyond bool) error {
	switch {
	case errors.Is(err, cgroup.ErrNoCgroup) && !beyond:
		return err
	case err == nil || errors.Is(err, cgroup.ErrNoCgroup) || own == nil && other != nil:
		return nil
	case own != nil:
		return own
	}
	return err
}

// Yield undoes the Apply in force, if any, as a later Apply that takes the
// knob over and sets no value of its own must: its value is given back.
func (k *Knob[V]) Yield() {
	k.mu.Lock()
	a := k.active
	k.mu.Unlock()
	if a != nil {
		a.yield()
	}
}

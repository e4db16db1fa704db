package applycost

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"

	automemlimit "github.com/KimMachineGun/automemlimit/memlimit"
	automaxprocs "go.uber.org/automaxprocs/maxprocs"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// Side is one contender: Apply sets GOMAXPROCS and GOMEMLIMIT the way the
// library does at start-up, Undo reverts what the last Apply did.
//
// Apply is what is measured; Undo runs with the timer stopped.
type Side struct {
	Name  string
	Apply func() error
	Undo  func()
}

// State is what the runtime knobs are set to.
type State struct {
	GOMAXPROCS int
	GOMEMLIMIT int64 // math.MaxInt64 when there is no limit
}

// Current reads the runtime knobs without changing them.
func Current() State {
	return State{GOMAXPROCS: runtime.GOMAXPROCS(0), GOMEMLIMIT: debug.SetMemoryLimit(-1)}
}

// Reset puts the runtime in the state a program starts in when neither
// GOMAXPROCS nor GOMEMLIMIT is set: the runtime's default GOMAXPROCS (with its
// automatic updates on) and no memory limit. Both sides start every call from
// this state.
func Reset() {
	runtime.SetDefaultGOMAXPROCS()
	debug.SetMemoryLimit(math.MaxInt64)
}

// Fitgo returns the side made of fitgo's maxprocs.Apply and memlimit.Apply
// with their defaults and no refresh, as a program calls them explicitly
// (the blank import adds the refresh loop); Undo is their Fit.Undo. Each
// Apply reads the limits itself with cgroup.Read and keeps nothing, so no
// call helps the next.
func Fitgo() Side {
	var (
		procs *maxprocs.Fit
		mem   *memlimit.Fit
	)
	return Side{
		Name: "fitgo",
		Apply: func() error {
			var err error
			if procs, err = maxprocs.Apply(maxprocs.Options{}); err != nil {
				return fmt.Errorf("maxprocs: %w", err)
			}
			if mem, err = memlimit.Apply(memlimit.Options{}); err != nil {
				return fmt.Errorf("memlimit: %w", err)
			}
			return nil
		},
		Undo: func() {
			mem.Undo()
			procs.Undo()
			procs, mem = nil, nil
		},
	}
}

// References are not contenders: they time parts of the work alone, to
// explain the sides' numbers. "cgroup.Read" reads the limits once with plain
// open/read/close, the floor under each fitgo Apply; "cgroup.NewWatcher"
// discovers the hierarchy and opens the limit files to keep, as fitgo's
// refresh loop does at its first tick, reads them once and closes them;
// "runtime.GOMAXPROCS" changes GOMAXPROCS from the runtime's default to 1
// (a stop-the-world), which both sides do in this cgroup.
func References() []Side {
	noUndo := func() {}
	return []Side{
		{Name: "ref:cgroup.Read", Apply: func() error { _, err := cgroup.Read(); return err }, Undo: noUndo},
		{Name: "ref:runtime.GOMAXPROCS", Apply: func() error { runtime.GOMAXPROCS(1); return nil }, Undo: noUndo},
		{Name: "ref:cgroup.NewWatcher", Apply: func() error {
			w, err := cgroup.NewWatcher(nil)
			if err != nil {
				return err
			}
			_, err = w.Read()
			w.Close()
			return err
		}, Undo: noUndo},
	}
}

// Anchors returns the side made of automaxprocs v1's maxprocs.Set and
// automemlimit v1's memlimit.Set with their defaults, as their blank imports
// call them (minus the logger, so that neither side logs). automemlimit has no
// undo: restoring the previous memory limit is its equivalent.
func Anchors() Side {
	var (
		undoProcs func()
		prevLimit int64
	)
	return Side{
		Name: "automaxprocs+automemlimit",
		Apply: func() error {
			prevLimit = debug.SetMemoryLimit(-1)
			undo, err := automaxprocs.Set()
			if err != nil {
				return fmt.Errorf("automaxprocs: %w", err)
			}
			undoProcs = undo
			if _, err := automemlimit.Set(); err != nil {
				return fmt.Errorf("automemlimit: %w", err)
			}
			return nil
		},
		Undo: func() {
			if undoProcs != nil {
				undoProcs()
				undoProcs = nil
			}
			debug.SetMemoryLimit(prevLimit)
		},
	}
}

// Check applies s once from the reset state and returns what it set, so that
// a caller can verify that inside a limited cgroup both sides set both knobs:
// otherwise the comparison would time an early return, not the work.
func Check(s Side) (State, error) {
	Reset()
	defer Reset()
	if err := s.Apply(); err != nil {
		s.Undo()
		return State{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	got := Current()
	s.Undo()
	return got, nil
}

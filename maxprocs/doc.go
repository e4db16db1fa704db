// Package maxprocs sets GOMAXPROCS from the CPU limit of the process's cgroup
// and keeps it in line when the limit changes.
//
//	fit, err := maxprocs.Apply(maxprocs.Options{Logger: logger, Refresh: time.Second})
//	if err != nil {
//		logger.Warn("GOMAXPROCS unchanged", "err", err) // a malformed cgroup file
//	}
//	defer fit.Undo()
//
// Most programs need none of this: the blank import of the root package
// applies this package and package memlimit with their defaults.
//
// The limit is the effective one: the tightest quota/period over the cgroup
// hierarchy visible to the process, on cgroup v1 and v2, capped at the CPUs
// the process may run on. The Policy rounds it to a whole number (by default
// Ceil with a minimum of 1; the Go runtime's own rule is Ceil with a minimum
// of 2), after subtracting a Reserve for sidecars.
//
// With Go 1.25 and later the runtime sets GOMAXPROCS from the leaf cgroup
// itself and updates it until runtime.GOMAXPROCS is called. fitgo does not
// call it when the value is already right, leaves the runtime a moment to
// make a change it would make itself, and hands GOMAXPROCS back with
// runtime.SetDefaultGOMAXPROCS on Undo.
//
// A refresh owns GOMAXPROCS only while it has the value fitgo set: when
// someone else changes it, fitgo stops managing it and Status says so,
// naming automaxprocs where the new value is its floor; with
// Options.Insist it puts its value back instead. A change to the value
// fitgo already has cannot be told from no change: end the refresh
// (Options.Context, or Undo) before setting GOMAXPROCS yourself.
//
// The README shows [what it sets] at common limits, next to the runtime's
// and automaxprocs' values, lists the [options] with their defaults, and
// says how to [migrate] from automaxprocs.
//
// [what it sets]: https://github.com/fitgo/fitgo#what-it-sets
// [options]: https://github.com/fitgo/fitgo#the-explicit-api
// [migrate]: https://github.com/fitgo/fitgo#migrating-from-automaxprocs-or-automemlimit
package maxprocs

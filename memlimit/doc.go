// Package memlimit sets the Go runtime's soft memory limit (GOMEMLIMIT) from
// the memory limit of the process's cgroup and keeps it in line when the
// limit changes.
//
//	fit, err := memlimit.Apply(memlimit.Options{Logger: logger, Refresh: time.Second})
//	if err != nil {
//		logger.Warn("GOMEMLIMIT unchanged", "err", err) // a malformed cgroup file
//	}
//	defer fit.Undo()
//
// Most programs need none of this: the blank import of the root package
// applies this package and package maxprocs with their defaults.
//
// The limit is the effective one: the tightest hard limit over the cgroup
// hierarchy, or memory.high where lower, less what the other processes under
// it hold (the headroom). The Policy keeps a margin below it (10 % by
// default) and leaves GOMEMLIMIT unset where the result is too small to
// prevent the OOM kill.
// fitgo never sets a soft limit above the container's limit, and never
// clears a limit the program set.
//
// The refresh's leak guard steps GOMEMLIMIT up toward the limit when a
// growing heap pins the GC at it, so that the process is OOM-killed and
// restarted instead of browning out.
//
// A refresh owns the memory limit only while it has the value fitgo set:
// when someone else changes it, fitgo stops managing it and Status says so,
// naming automemlimit where the new value is its rule's; with
// Options.Insist it puts its value back instead. Setting the value fitgo
// already has cannot be told from no change: end the refresh
// (Options.Context, or Undo) before setting the limit yourself.
//
// The README shows [what it sets] at common limits, beside a co-process and
// with memory.high, next to automemlimit's values, lists the [options] with
// their defaults, and says how to [migrate] from automemlimit.
//
// [what it sets]: https://github.com/fitgo/fitgo#what-it-sets
// [options]: https://github.com/fitgo/fitgo#the-explicit-api
// [migrate]: https://github.com/fitgo/fitgo#migrating-from-automaxprocs-or-automemlimit
package memlimit

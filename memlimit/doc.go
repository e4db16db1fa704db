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
// hierarchy, or memory.high when it is lower (the kernel throttles above
// it). The Policy keeps headroom below it: GOMEMLIMIT is the lower of
// Ratio × limit and limit − Reserve, and is left unset when that is under
// Min, where a soft limit would keep the GC running without preventing the
// OOM kill. fitgo never sets a soft limit above the container's limit, and
// never clears a limit the program set. The runtime's value with no limit
// is math.MaxInt64.
//
// The refresh also guards against a leak: when GOMEMLIMIT sets the heap goal
// and the GC takes more than a fifth of the CPU for 30 readings in a row, it
// steps GOMEMLIMIT up toward the limit, so that the process is OOM-killed
// and restarted instead of browning out (Result.LeakGuard; off with
// Options.NoLeakGuard).
//
// A refresh owns the memory limit only while it has the value fitgo set:
// when someone else changes it, fitgo stops managing it and Status says so,
// naming automemlimit where the new value is its rule's; with
// Options.Insist it puts its value back instead. Setting the value fitgo
// already has cannot be told from no change: end the refresh
// (Options.Context, or Undo) before setting the limit yourself.
package memlimit

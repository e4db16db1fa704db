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
// hierarchy (memory.max on v2; memory.limit_in_bytes and
// hierarchical_memory_limit on v1), or memory.high when it is lower, since
// the kernel throttles and reclaims hard above it. A limit of 0 is a limit.
// The Policy keeps headroom below it: GOMEMLIMIT is the lower of Ratio ×
// limit (0.9 by default) and limit − Reserve, and is left unset when that is
// under Min (16 MiB by default), where a soft limit would keep the GC
// running without preventing the OOM kill. fitgo never sets a soft limit
// above the container's limit, and never clears a limit the program set.
//
// A refresh owns the memory limit only while it has the value fitgo set:
// when someone else changes it, fitgo stops managing it and Status says what
// changed. Setting the value fitgo already has cannot be told apart from no
// change; stop fitgo's management (Stop) before setting the limit yourself.
package memlimit

// Package memlimit sets the Go runtime's soft memory limit (GOMEMLIMIT) from
// the memory limit of the process's cgroup and keeps it in line when the
// limit changes.
//
// # Usage
//
//	res, err := memlimit.Apply(
//		memlimit.WithRatio(0.9),
//		memlimit.WithLogger(logger),
//		memlimit.WithRefresh(ctx, 0), // follow resizes every second
//	)
//	if err != nil {
//		logger.Warn("GOMEMLIMIT unchanged", "err", err) // a malformed cgroup file
//	}
//	defer res.Undo()
//
// Most programs need none of this: a blank import of the root package,
//
//	import _ "github.com/fitgo/fitgo"
//
// applies this package and package maxprocs at start-up with the defaults and
// follows changes.
//
// # Policy
//
// The limit is the effective one: the tightest hard limit over the whole
// cgroup hierarchy (memory.max on v2; memory.limit_in_bytes and
// hierarchical_memory_limit on v1), or memory.high when it is lower, since
// the kernel throttles and reclaims hard above it. The Policy turns it into
// GOMEMLIMIT:
//
//   - Ratio (default 0.9) keeps a share of the limit for what the runtime does
//     not count against GOMEMLIMIT: the binary's text, memory allocated by C
//     code, the page cache charged to the cgroup.
//   - Reserve keeps a fixed number of bytes free, for a sidecar in the same
//     cgroup or a known C allocation. With both, the lower result wins.
//   - MinLimit (default 16 MiB) is the tiny-limit rule: a result below it
//     leaves GOMEMLIMIT unset. The runtime accounts about 5 MiB of its own
//     before any heap, so a smaller soft limit keeps the GC running back to
//     back without preventing the OOM kill; the hard limit is better left to
//     act alone. fitgo never raises a soft limit above the container's limit
//     (automemlimit's WithMin can).
//
// Policy.Limit is the pure function; Plan shows what Apply would do without
// doing it. WithSystemMemory falls back to the machine's MemTotal when there
// is no cgroup limit; it is off by default.
//
// # When GOMEMLIMIT is left alone
//
// Apply does not touch the memory limit, and says why in Result.Reason, when
// the GOMEMLIMIT environment variable is set (a byte count such as 512MiB,
// or "off"; parsed as the runtime parses it), when the system is not Linux or
// has no cgroup, when there is no memory limit, when the policy leaves it
// unset, and when it already has the value. It never sets the limit to
// NoLimit, so it cannot clear a limit the program set. A malformed cgroup file
// is an error in the Result, and the memory limit is untouched.
//
// # Following changes
//
// WithRefresh starts a loop that re-reads the limit (files opened once and
// re-read without allocating) and sets GOMEMLIMIT when the policy's value
// changes, as after a Kubernetes in-place pod resize; the default interval is
// one second, as in package maxprocs, with which the loop and its files are
// shared. If the limit goes away, the value from before fitgo is restored.
//
// The loop owns the memory limit only while it is the value fitgo set
// (read with debug.SetMemoryLimit(-1)). When the program or an operator
// changes it, the loop stops and Status says what changed; fitgo never
// overwrites a limit it did not set. Stop ends the loop and keeps the value;
// Undo ends it and restores the previous value; a later Apply replaces it.
//
// # Cost
//
// Apply reads the cgroup files once, with plain open, read and close system
// calls, and keeps nothing open; a maxprocs.Apply that follows within 100 ms
// shares that reading, so the pair costs one reading of the hierarchy (tens
// of microseconds). A refresh tick re-reads the files the loop keeps open:
// one pread per file, a few microseconds, no allocation.
package memlimit

// Package maxprocs sets GOMAXPROCS from the CPU limit of the process's cgroup
// and keeps it in line when the limit changes.
//
// # Usage
//
//	res, err := maxprocs.Apply(
//		maxprocs.WithLogger(logger),
//		maxprocs.WithRefresh(ctx, 0), // follow resizes every second
//	)
//	if err != nil {
//		logger.Warn("GOMAXPROCS unchanged", "err", err) // a malformed cgroup file
//	}
//	defer res.Undo()
//
// Most programs need none of this: a blank import of the root package,
//
//	import _ "github.com/fitgo/fitgo"
//
// applies this package and package memlimit at start-up with the defaults and
// follows changes.
//
// # Policy
//
// The limit is the effective one: the tightest quota/period over the whole
// cgroup hierarchy visible to the process (a pod-level or systemd-slice limit
// above the container counts), on cgroup v1 and v2, read by package cgroup. It
// is capped at the number of CPUs the process may run on (runtime.NumCPU, the
// CPU affinity at start-up), then the Policy turns it into a whole number:
//
//   - Rounding: Ceil (default) rounds up, Floor rounds down, Nearest rounds
//     halves up; each has a minimum of 1. The Go runtime's own rule is Ceil
//     with a minimum of 2. A GOMAXPROCS above the quota lets the scheduler
//     burn the quota early in each CFS period and then sit throttled; one
//     below it caps the process below its quota, which under load is far
//     worse. The README has the sweep of quotas and loads that chose Ceil.
//   - Min and Max bound the result (Min 0 means 1).
//   - Reserve subtracts cores before rounding, for sidecars that share the limit.
//
// The result never exceeds the CPU count. Policy.Procs is the pure function;
// Plan shows what Apply would do without doing it.
//
// # When GOMAXPROCS is left alone
//
// Apply does not touch GOMAXPROCS, and says why in Result.Reason, when the
// GOMAXPROCS environment variable holds a value the runtime honours (an
// integer > 0, parsed as the runtime parses it; an empty or invalid value is
// ignored by the runtime and by fitgo), when the system is not Linux or has no
// cgroup, when there is no CPU limit, and when GOMAXPROCS already has the
// value the policy gives. A malformed cgroup file is an error in the Result,
// and GOMAXPROCS is untouched.
//
// # The Go runtime's own container support
//
// From Go 1.25, the runtime sets GOMAXPROCS from the leaf cgroup's CPU limit
// (rounded up, at least 2) and updates it about once a second, unless the
// program calls runtime.GOMAXPROCS, which switches those updates off for good.
// fitgo cooperates:
//
//   - When the policy's value equals the current one, Apply does not call
//     runtime.GOMAXPROCS, so the runtime keeps updating.
//   - While the runtime manages the value, the refresh loop accepts the
//     runtime's own updates, waits briefly for the runtime to make a change it
//     would make itself, and only then sets the value.
//   - Undo calls runtime.SetDefaultGOMAXPROCS, which hands the value and the
//     updates back to the runtime.
//
// Both runtime behaviours are GODEBUG settings (containermaxprocs,
// updatemaxprocs) that default to off when the main module's go line is 1.24
// or older, whatever the toolchain. fitgo reads them as the runtime does (the
// binary's DefaultGODEBUG, then the GODEBUG environment variable) and reports
// them in Result.Runtime. fitgo itself declares go 1.23, so importing it never
// changes a program's GODEBUG defaults.
//
// # Following changes
//
// WithRefresh starts a loop that re-reads the limit (files opened once and
// re-read without allocating; a tick costs microseconds) and sets GOMAXPROCS
// when the policy's value changes, as after a Kubernetes in-place pod resize.
// The default interval, one second, is the cadence of the runtime's own
// checks: both react to a resize within the same second or two, and at one
// tick per second the loop's cost is unmeasurable next to any real workload.
//
// The loop owns GOMAXPROCS only while the value is the one fitgo set. When
// someone else changes it (the program, a library, an operator through a
// debug endpoint), the loop stops and Status says who changed what; fitgo never
// fights over the value. Stop ends the loop and keeps the value; Undo ends it
// and restores the previous state; a later Apply replaces it.
//
// # Cost
//
// Apply reads the cgroup files once, with plain open, read and close system
// calls, and keeps nothing open; a memlimit.Apply that follows within 100 ms
// shares that reading, so the pair costs one reading of the hierarchy (tens
// of microseconds). A refresh tick re-reads the files the loop keeps open:
// one pread per file, a few microseconds, no allocation.
package maxprocs

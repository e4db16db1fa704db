// Package fitgo fits the Go runtime to the container it runs in. Import it
// for its side effects:
//
//	import _ "github.com/fitgo/fitgo"
//
// At start-up it reads the limits of the process's cgroup hierarchy once,
// sets GOMAXPROCS (package maxprocs) and GOMEMLIMIT (package memlimit) from
// them with those packages' defaults, and then follows the limits once a
// second in one goroutine. It leaves a knob alone when its environment
// variable is set or an earlier init already set it, and stops managing a
// knob as soon as someone else changes it. Startup reports what it did.
//
// FITGO configures it, like GODEBUG: a comma-separated list of
//
//	off                 do nothing at all
//	maxprocs=off        leave GOMAXPROCS alone
//	memlimit=off        leave GOMEMLIMIT alone
//	refresh=off         apply at start-up only; do not follow changes
//	refresh=<duration>  follow changes at this interval (e.g. refresh=250ms)
//	rounding=<rule>     GOMAXPROCS rounding: floor, ceil or nearest
//	insist=on           keep fitgo's values against later changes by other
//	                    code (or insist=maxprocs, insist=memlimit)
//	headroom=off        fit GOMEMLIMIT to the whole memory limit, not to
//	                    what the other processes under it leave
//	leakguard=off       keep GOMEMLIMIT at the policy's value even while a
//	                    growing heap pins the GC at it
//	nongo=off           leave the process's own memory outside the Go
//	                    runtime (cgo, mmap) to the ratio instead of taking it
//	                    off with the others' (memlimit's NoNonGo)
//	gc=auto             raise GOGC so that the heap may use up to 70 % of
//	                    the memory available (memlimit's GC policy)
//	reserve=<bytes>     take this much (64Mi, 67108864) off the memory limit
//	                    before the ratio, for what fitgo cannot see, such as
//	                    a sidecar under a pod-level limit (memlimit's Reserve)
//	oomprofile=<dir>    write a heap profile and a memory breakdown into this
//	                    absolute directory when the memory held passes 90 %
//	                    of the limit (memlimit's OOMProfile)
//
// FITGO_MEMORY_LIMIT is a memory limit known from outside, such as a
// pod-level limit that a private cgroup namespace hides: bytes, as the
// downward API writes them, or a Kubernetes quantity (512Mi, 1G), of at least
// 1 MiB (not 0, 1e9, or 512 from a divisor of 1Mi). FITGO_CPU_LIMIT is the
// same for the CPU limit: cores (1.5), millicores (1500m), or a bare integer
// of at least 1000 as millicores, as the downward API writes limits.cpu with
// divisor 1m (a smaller bare integer could be whole cores).
//
// A field of FITGO that is not understood is skipped and reported in
// Report.SettingErr; the rest still applies. A limit variable not understood,
// or a memory limit or reserve that leaves less than the policy's minimum
// GOMEMLIMIT, is ignored as if unset, and reported in its knob's Status
// (SettingErr).
//
// It logs at its first reading of the limits, a second after start, through
// slog.Default as main has set it by then (with refresh=off, at init; a
// program that exits sooner logs nothing): a Warn line for each setting not
// understood, the error as its message, then an Info line when it changed
// something, else Debug, never a warning for running outside a container.
// Later changes go there too, a flapping limit at most once per ten seconds.
// It never panics, exits or blocks: an error is in the Report.
//
// For other policies, logging or lifetimes, do not import this package: call
// maxprocs.Apply and memlimit.Apply in main (the README's [explicit API]).
// The README also shows [what it sets] for common limits next to what the Go
// runtime, automaxprocs and automemlimit set, the [configuration] in a table,
// and [how it compares].
//
// [what it sets]: https://github.com/fitgo/fitgo#what-it-sets
// [configuration]: https://github.com/fitgo/fitgo#configuration-fitgo-and-the-environment
// [explicit API]: https://github.com/fitgo/fitgo#the-explicit-api
// [how it compares]: https://github.com/fitgo/fitgo#how-it-compares
package fitgo

// Package fitgo fits the Go runtime to the container it runs in. Import it
// for its side effects:
//
//	import _ "github.com/fitgo/fitgo"
//
// At start-up it sets GOMAXPROCS from the CPU limit (package maxprocs) and
// GOMEMLIMIT from the memory limit (package memlimit) of the process's cgroup
// hierarchy, with the defaults of those packages, and then follows the limits
// once a second, so that an in-place pod resize is reflected within a second
// or two. Everything it did is available to the program through Results.
//
// # Defaults
//
//   - GOMAXPROCS: the effective CPU limit (the tightest over the cgroup
//     hierarchy, parents included) rounded down, at least 1, at most the CPU
//     count. Left alone when the GOMAXPROCS environment variable is set to a
//     value the runtime honours, or when an earlier init (another library)
//     already changed it, and not called when the runtime already has the
//     value (so the Go 1.25+ runtime's own updates stay on).
//   - GOMEMLIMIT: 90% of the lower of memory.max and memory.high, never above
//     the limit, left unset when that is under 16 MiB. Left alone when the
//     GOMEMLIMIT environment variable is set, including to "off", or when an
//     earlier init (automemlimit, say) already set a limit.
//   - Following: one goroutine re-reads the limit files every second. It
//     opens them at its first tick and keeps them open (a handful of file
//     descriptors), so a tick is one pread per file and allocates nothing. It
//     stops managing a knob as soon as someone else changes it, and exits
//     when it manages neither.
//
// # The FITGO environment variable
//
// FITGO configures the blank import, like GODEBUG: a comma-separated list of
//
//	off                 do nothing at all
//	maxprocs=off        leave GOMAXPROCS alone
//	memlimit=off        leave GOMEMLIMIT alone
//	refresh=off         apply at start-up only; do not follow changes
//	refresh=<duration>  follow changes at this interval (e.g. refresh=250ms)
//	rounding=<rule>     GOMAXPROCS rounding: floor, ceil or nearest (maxprocs.Rounding)
//
// A field that is not understood is skipped and reported in
// Report.SettingErr; the rest still applies.
//
// # Logging
//
// The blank import logs one line at Info level through slog.Default when it
// changes something at start-up, and a Debug line otherwise: nothing at all,
// with the default logger, in a process without container limits, and never
// a warning for that. Later events of the refresh loop (a change after a
// resize, a hand-over when the program changes a knob itself) go to
// slog.Default as configured at that time. Programs that want the details
// can log Results(), which implements slog.LogValuer.
//
// # Safety
//
// The blank import never panics, exits or blocks: a malformed cgroup file
// leaves the runtime untouched and shows in the results, and even a panic
// inside fitgo is recovered and reported in Report.Err. It registers no HTTP
// handler and no expvar, and touches nothing besides GOMAXPROCS, the memory
// limit and its one refresh goroutine (which exits when both knobs stop being
// managed).
//
// For control over the policies, logging or the refresh loop, do not import
// this package; call maxprocs.Apply and memlimit.Apply in main instead.
package fitgo

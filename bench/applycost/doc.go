// Package applycost measures what it costs to fit the Go runtime to a container
// once: fitgo's maxprocs.Apply plus memlimit.Apply against the two libraries
// most services use today, automaxprocs' maxprocs.Set plus automemlimit's
// memlimit.Set.
//
// Each side is a [Side]: Apply does the work that is timed, Undo puts the
// runtime back so that the next call does the full work again. Between calls
// the harness also resets the runtime to the same starting point for both
// sides (the runtime's default GOMAXPROCS, no memory limit), outside the timer.
//
// Two measurements, both alternating the sides:
//
//   - In process: [Interleave] runs rounds of [testing.Benchmark] for each
//     side in turn (A B, B A, ...) and prints Go benchmark lines, whose
//     medians of ns/op and allocs/op and their ratio are the target
//     (fitgo's pair cheaper than the anchors'). [References] add the
//     cost of the cgroup discovery alone, the floor under any Apply.
//   - Cold: [MeasureCold] times one call first thing in a fresh process, as at
//     start-up, page faults and all.
//
// The numbers mean something only inside a cgroup with a CPU quota and a
// memory limit, where both sides find limits and set both knobs:
// TestApplyCostInCgroup builds the test binary with "go test -c", creates such
// a cgroup (as root, cgroup v1), runs the comparison there, logs the table and
// removes the cgroup:
//
//	cd bench && go test -run TestApplyCostInCgroup -v ./applycost/
//
// The standard benchmarks run anywhere (outside a limited cgroup both sides
// may return early):
//
//	go test -run '^$' -bench . -count 10 ./applycost/
package applycost

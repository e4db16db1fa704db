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
// [Compare] runs the sides alternately in one process, several rounds of
// [testing.Benchmark] each, and reports the medians of ns/op and allocs/op and
// their ratios. The numbers mean something only inside a cgroup with a CPU
// quota and a memory limit, where both sides find a limit and set both knobs:
// TestApplyCostInCgroup builds the test binary with "go test -c", creates such
// a cgroup (as root), runs the comparison there and removes the cgroup.
//
// The standard benchmarks run anywhere:
//
//	go test -run '^$' -bench . -count 10 ./applycost/ | tee new.txt
package applycost

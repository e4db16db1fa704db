package maxprocs_test

import (
	"context"
	"fmt"

	"github.com/fitgo/fitgo/maxprocs"
)

// The default policy rounds a fractional CPU limit down; Ceil is the Go
// runtime's own rule.
func ExamplePolicy_Procs() {
	ncpu := 8
	for _, quota := range []float64{0.5, 1, 1.5, 2.5, 12} {
		floor := maxprocs.Policy{}.Procs(quota, ncpu)
		ceil := maxprocs.Policy{Rounding: maxprocs.Ceil}.Procs(quota, ncpu)
		fmt.Printf("limit %4.1f CPUs on %d: floor %d, ceil %d\n", quota, ncpu, floor, ceil)
	}
	// Output:
	// limit  0.5 CPUs on 8: floor 1, ceil 2
	// limit  1.0 CPUs on 8: floor 1, ceil 2
	// limit  1.5 CPUs on 8: floor 1, ceil 2
	// limit  2.5 CPUs on 8: floor 2, ceil 3
	// limit 12.0 CPUs on 8: floor 8, ceil 8
}

// A reserve leaves room for a sidecar that shares the pod's CPU limit.
func ExamplePolicy_Procs_reserve() {
	p := maxprocs.Policy{Reserve: 0.5, Max: 4}
	fmt.Println(p)
	for _, quota := range []float64{1, 2, 2.5, 8} {
		fmt.Printf("limit %.1f: GOMAXPROCS %d\n", quota, p.Procs(quota, 16))
	}
	// Output:
	// floor, min 1, max 4, reserve 0.5 cores
	// limit 1.0: GOMAXPROCS 1
	// limit 2.0: GOMAXPROCS 1
	// limit 2.5: GOMAXPROCS 2
	// limit 8.0: GOMAXPROCS 4
}

// Plan shows what Apply would do here, without doing it: automaxprocs users
// have long asked to query the value without setting it.
func ExamplePlan() {
	res, err := maxprocs.Plan(maxprocs.WithRounding(maxprocs.Ceil))
	if err != nil {
		fmt.Println("cannot read the CPU limit:", err)
		return
	}
	fmt.Println(res) // e.g. "GOMAXPROCS 8 -> 2; CPU limit 1.5 cores from /sys/fs/cgroup/kubepods.slice/...; policy ceil, min 2"
}

// Apply in main, following resizes until the program ends.
func ExampleApply() {
	res, err := maxprocs.Apply(maxprocs.WithRefresh(context.Background(), 0))
	if err != nil {
		fmt.Println("GOMAXPROCS unchanged:", err)
	}
	defer res.Undo()
	fmt.Println(res.After, res.Reason)
}

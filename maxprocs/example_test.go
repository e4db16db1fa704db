package maxprocs_test

import (
	"context"
	"fmt"

	"github.com/fitgo/fitgo/maxprocs"
)

// The rounding rules side by side; the Go runtime's own rule is Ceil with a
// minimum of 2.
func ExamplePolicy_Procs() {
	ncpu := 8
	for _, quota := range []float64{0.5, 1, 1.25, 1.5, 2.5, 12} {
		fmt.Printf("limit %5.2f CPUs on %d:", quota, ncpu)
		for _, p := range []maxprocs.Policy{
			{Rounding: maxprocs.Floor},
			{Rounding: maxprocs.Ceil},
			{Rounding: maxprocs.Nearest},
			{Rounding: maxprocs.Ceil, Min: 2},
		} {
			fmt.Printf(" %s %d;", p, p.Procs(quota, ncpu))
		}
		fmt.Println()
	}
	// Output:
	// limit  0.50 CPUs on 8: floor, min 1 1; ceil, min 1 1; nearest, min 1 1; ceil, min 2 2;
	// limit  1.00 CPUs on 8: floor, min 1 1; ceil, min 1 1; nearest, min 1 1; ceil, min 2 2;
	// limit  1.25 CPUs on 8: floor, min 1 1; ceil, min 1 2; nearest, min 1 1; ceil, min 2 2;
	// limit  1.50 CPUs on 8: floor, min 1 1; ceil, min 1 2; nearest, min 1 2; ceil, min 2 2;
	// limit  2.50 CPUs on 8: floor, min 1 2; ceil, min 1 3; nearest, min 1 3; ceil, min 2 3;
	// limit 12.00 CPUs on 8: floor, min 1 8; ceil, min 1 8; nearest, min 1 8; ceil, min 2 8;
}

// A reserve leaves room for a sidecar that shares the pod's CPU limit.
func ExamplePolicy_Procs_reserve() {
	p := maxprocs.Policy{Rounding: maxprocs.Floor, Reserve: 0.5, Max: 4}
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
	fmt.Println(res) // e.g. "GOMAXPROCS 8 -> 2; CPU limit 1.5 cores from /sys/fs/cgroup/kubepods.slice/...; policy ceil, min 1"
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

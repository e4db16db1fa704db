package maxprocs_test

import (
	"context"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
)

// The rounding rules side by side; the Go runtime's own rule is Ceil with a
// minimum of 2.
func ExamplePolicy_Procs() {
	ncpu := 8
	for _, quota := range []float64{0.5, 1, 1.25, 1.5, 2.5, 12} {
		fmt.Printf("limit %5.2f CPUs on %d:", quota, ncpu)
		for _, p := range []struct {
			name string
			maxprocs.Policy
		}{
			{"floor", maxprocs.Policy{Rounding: maxprocs.Floor}},
			{"ceil", maxprocs.Policy{Rounding: maxprocs.Ceil}},
			{"nearest", maxprocs.Policy{Rounding: maxprocs.Nearest}},
			{"ceil, min 2", maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 2}},
		} {
			fmt.Printf(" %s %d;", p.name, p.Procs(quota, ncpu))
		}
		fmt.Println()
	}
	// Output:
	// limit  0.50 CPUs on 8: floor 1; ceil 1; nearest 1; ceil, min 2 2;
	// limit  1.00 CPUs on 8: floor 1; ceil 1; nearest 1; ceil, min 2 2;
	// limit  1.25 CPUs on 8: floor 1; ceil 2; nearest 1; ceil, min 2 2;
	// limit  1.50 CPUs on 8: floor 1; ceil 2; nearest 2; ceil, min 2 2;
	// limit  2.50 CPUs on 8: floor 2; ceil 3; nearest 3; ceil, min 2 3;
	// limit 12.00 CPUs on 8: floor 8; ceil 8; nearest 8; ceil, min 2 8;
}

// A reserve leaves room for a sidecar that shares the pod's CPU limit.
func ExamplePolicy_Procs_reserve() {
	p := maxprocs.Policy{Rounding: maxprocs.Floor, Reserve: 0.5, Max: 4}
	for _, quota := range []float64{1, 2, 2.5, 8} {
		fmt.Printf("limit %.1f: GOMAXPROCS %d\n", quota, p.Procs(quota, 16))
	}
	// Output:
	// limit 1.0: GOMAXPROCS 1
	// limit 2.0: GOMAXPROCS 1
	// limit 2.5: GOMAXPROCS 2
	// limit 8.0: GOMAXPROCS 4
}

// Plan shows what Apply would do for limits the program read itself, here
// a 1.5-CPU limit on a pod, without changing anything.
func ExamplePlan() {
	lim, _ := cgroup.ReadFS(fstest.MapFS{
		"proc/self/cgroup":                          {Data: []byte("0::/kubepods.slice/pod1/app\n")},
		"proc/self/mountinfo":                       {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup/kubepods.slice/pod1/cpu.max": {Data: []byte("150000 100000\n")},
	})
	for _, r := range []struct {
		name string
		maxprocs.Rounding
	}{{"floor", maxprocs.Floor}, {"ceil", maxprocs.Ceil}} {
		res, err := maxprocs.Plan(maxprocs.Options{Policy: maxprocs.Policy{Rounding: r.Rounding}, Limits: &lim})
		if err != nil {
			fmt.Println("cannot read the CPU limit:", err)
			return
		}
		fmt.Printf("%s: %v cores from %s: GOMAXPROCS %d on 8 CPUs\n", r.name, res.Limit, res.Source, res.Policy.Procs(res.Limit, 8))
	}
	// Output:
	// floor: 1.5 cores from /sys/fs/cgroup/kubepods.slice/pod1: GOMAXPROCS 1 on 8 CPUs
	// ceil: 1.5 cores from /sys/fs/cgroup/kubepods.slice/pod1: GOMAXPROCS 2 on 8 CPUs
}

// Apply in main, following resizes until the program ends.
func ExampleApply() {
	fit, err := maxprocs.Apply(maxprocs.Options{Refresh: time.Second, Context: context.Background()})
	if err != nil {
		fmt.Println("GOMAXPROCS unchanged:", err)
	}
	defer fit.Undo()
	fmt.Println(fit.Status())
}

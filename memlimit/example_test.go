package memlimit_test

import (
	"fmt"
	"testing/fstest"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/memlimit"
)

// The default policy keeps 10% of the limit free and sets nothing for tiny
// limits; it never goes above the limit.
func ExamplePolicy_SoftLimit() {
	var p memlimit.Policy // the zero Policy is the default
	for _, mib := range []int64{16, 20, 384, 512, 4096} {
		fmt.Printf("limit %4d MiB: GOMEMLIMIT %d bytes\n", mib, p.SoftLimit(mib<<20))
	}
	// Output:
	// limit   16 MiB: GOMEMLIMIT 0 bytes
	// limit   20 MiB: GOMEMLIMIT 18874368 bytes
	// limit  384 MiB: GOMEMLIMIT 362387865 bytes
	// limit  512 MiB: GOMEMLIMIT 483183820 bytes
	// limit 4096 MiB: GOMEMLIMIT 3865470566 bytes
}

// With a reserve, the lower of both rules wins: the ratio for small limits,
// the reserve for large ones.
func ExamplePolicy_SoftLimit_reserve() {
	p := memlimit.Policy{Ratio: 0.95, Margin: 256 << 20}
	for _, mib := range []int64{1024, 4096, 16384} {
		fmt.Printf("limit %5d MiB: GOMEMLIMIT %d MiB\n", mib, p.SoftLimit(mib<<20)>>20)
	}
	// Output:
	// limit  1024 MiB: GOMEMLIMIT 768 MiB
	// limit  4096 MiB: GOMEMLIMIT 3840 MiB
	// limit 16384 MiB: GOMEMLIMIT 15564 MiB
}

// Plan shows what Apply would do for limits the program read itself, here
// a v1 container whose 512 MiB limit sits on a parent the container cannot
// see, without changing anything.
func ExamplePlan() {
	lim, _ := cgroup.ReadFS(fstest.MapFS{
		"proc/self/cgroup":                           {Data: []byte("4:memory:/docker/abc\n")},
		"proc/self/mountinfo":                        {Data: []byte("30 25 0:26 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
		"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
		"sys/fs/cgroup/memory/memory.stat":           {Data: []byte("cache 0\nhierarchical_memory_limit 536870912\n")},
	})
	res, err := memlimit.Plan(memlimit.Options{Policy: memlimit.Policy{Margin: 64 << 20}, Limits: &lim})
	if err != nil {
		fmt.Println("cannot read the memory limit:", err)
		return
	}
	fmt.Printf("%s %d bytes from %s (ratio %v, margin %d): GOMEMLIMIT %d\n", res.From, res.Limit, res.Source,
		res.Policy.Ratio, res.Policy.Margin, res.Policy.SoftLimit(res.Limit))
	// Output:
	// memory.limit_in_bytes 536870912 bytes from /sys/fs/cgroup/memory (ratio 0.9, margin 67108864): GOMEMLIMIT 469762048
}

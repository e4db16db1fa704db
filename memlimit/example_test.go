package memlimit_test

import (
	"fmt"

	"github.com/fitgo/fitgo/memlimit"
)

// The default policy keeps 10% of the limit free and sets nothing for tiny
// limits; it never goes above the limit.
func ExamplePolicy_Limit() {
	p := memlimit.DefaultPolicy()
	fmt.Println(p)
	for _, mib := range []int64{16, 20, 384, 512, 4096} {
		fmt.Printf("limit %4d MiB: GOMEMLIMIT %d bytes\n", mib, p.Limit(mib<<20))
	}
	// Output:
	// ratio 0.9, min 16 MiB
	// limit   16 MiB: GOMEMLIMIT 0 bytes
	// limit   20 MiB: GOMEMLIMIT 18874368 bytes
	// limit  384 MiB: GOMEMLIMIT 362387865 bytes
	// limit  512 MiB: GOMEMLIMIT 483183820 bytes
	// limit 4096 MiB: GOMEMLIMIT 3865470566 bytes
}

// With a reserve, the lower of both rules wins: the ratio for small limits,
// the reserve for large ones.
func ExamplePolicy_Limit_reserve() {
	p := memlimit.Policy{Ratio: 0.95, Reserve: 256 << 20}
	fmt.Println(p)
	for _, mib := range []int64{1024, 4096, 16384} {
		fmt.Printf("limit %5d MiB: GOMEMLIMIT %d MiB\n", mib, p.Limit(mib<<20)>>20)
	}
	// Output:
	// ratio 0.95, reserve 256 MiB
	// limit  1024 MiB: GOMEMLIMIT 768 MiB
	// limit  4096 MiB: GOMEMLIMIT 3840 MiB
	// limit 16384 MiB: GOMEMLIMIT 15564 MiB
}

// Plan shows what Apply would do here, without doing it.
func ExamplePlan() {
	res, err := memlimit.Plan(memlimit.WithReserve(64 << 20))
	if err != nil {
		fmt.Println("cannot read the memory limit:", err)
		return
	}
	fmt.Println(res) // e.g. "GOMEMLIMIT no limit -> 460.8 MiB; memory.max 512 MiB from /sys/fs/cgroup/...; policy ratio 0.9, reserve 64 MiB, min 16 MiB"
}

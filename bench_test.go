package fitgo

import (
	"testing"

	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// BenchmarkApplyBoth is what a program pays per maxprocs.Apply() plus
// memlimit.Apply() with the defaults, on this machine's own cgroup. Run it
// inside a limited cgroup to measure the path that reads and sets limits.
func BenchmarkApplyBoth(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := maxprocs.Apply(); err != nil {
			b.Fatal(err)
		}
		if _, err := memlimit.Apply(); err != nil {
			b.Fatal(err)
		}
	}
}

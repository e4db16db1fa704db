package fitgo

import (
	"testing"

	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// BenchmarkApplyBoth is what a program pays for maxprocs.Apply plus
// memlimit.Apply with the defaults, on this machine's own cgroup, each
// reading the limits itself. Run it inside a limited cgroup to measure the
// path that reads and sets limits. The runtime knobs are restored (timer
// stopped) in between.
func BenchmarkApplyBoth(b *testing.B) {
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			mp, _ := maxprocs.Apply(maxprocs.Options{})
			ml, _ := memlimit.Apply(memlimit.Options{})
			b.StopTimer()
			ml.Undo()
			mp.Undo()
			b.StartTimer()
		}
	})
}

package fitgo

import (
	"testing"

	"github.com/fitgo/fitgo/internal/refresh"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// BenchmarkApplyBoth is what a program pays for maxprocs.Apply() plus
// memlimit.Apply() with the defaults, on this machine's own cgroup. Run it
// inside a limited cgroup to measure the path that reads and sets limits.
//
// "first" is the pair as at start-up: each iteration gets a fresh shared
// reader, so maxprocs.Apply reads the hierarchy and memlimit.Apply shares
// that reading; the runtime knobs are restored (timer stopped) in between.
// "again" calls the pair repeatedly on the same reader: both read afresh,
// since a knob never reuses a reading.
func BenchmarkApplyBoth(b *testing.B) {
	saved := refresh.Default
	defer func() { refresh.Default = saved }()
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			refresh.Default = refresh.NewDefault()
			b.StartTimer()
			mp, err := maxprocs.Apply()
			if err != nil {
				b.Fatal(err)
			}
			ml, err := memlimit.Apply()
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			ml.Undo()
			mp.Undo()
			b.StartTimer()
		}
	})
	b.Run("again", func(b *testing.B) {
		refresh.Default = refresh.NewDefault()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := maxprocs.Apply(); err != nil {
				b.Fatal(err)
			}
			if _, err := memlimit.Apply(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

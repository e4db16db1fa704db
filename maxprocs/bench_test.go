package maxprocs

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkApply measures Apply on this machine's own cgroup files and
// runtime (no refresh loop), and on an in-memory v2 tree with a fake knob.
func BenchmarkApply(b *testing.B) {
	b.Run("live", func(b *testing.B) {
		prev := runtime.GOMAXPROCS(0)
		defer runtime.GOMAXPROCS(prev) // the testing package checks it
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Apply(Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fixture", func(b *testing.B) {
		te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, v2FS("50000 100000", "200000 100000"))
		o := te.opts(Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := Apply(o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTick is one refresh tick of GOMAXPROCS when nothing changed: the
// common case, once a second.
func BenchmarkTick(b *testing.B) {
	te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	fit, err := Apply(te.opts(Options{Refresh: time.Hour}))
	if err != nil {
		b.Fatal(err)
	}
	defer stop(fit)
	lim := cpuLimits(0.5, "/sys/fs/cgroup/app")
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fit.tick(fit.f, now, lim, nil)
	}
}

package memlimit

import (
	"testing"
	"time"
)

// BenchmarkApply measures Apply on this machine's own cgroup files and
// runtime (no refresh loop), and on an in-memory v2 tree with a fake knob.
func BenchmarkApply(b *testing.B) {
	b.Run("live", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Apply(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fixture", func(b *testing.B) {
		te := newTestEnv(&fakeKnob{value: NoLimit}, v2FS("536870912", "", ""))
		opt := te.opt()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := Apply(opt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTick is one refresh tick of GOMEMLIMIT when nothing changed.
func BenchmarkTick(b *testing.B) {
	te := newTestEnv(&fakeKnob{value: NoLimit}, nil)
	te.src.set(memLimits(512*MiB, 0))
	res, err := Apply(te.opt(), WithRefresh(background, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Stop()
	s := res.s
	lim := memLimits(512*MiB, 0)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Tick(now, lim, nil)
	}
}

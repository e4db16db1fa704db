package memlimit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// BenchmarkApply measures Apply on this machine's own cgroup files and
// runtime (no refresh loop), and on an in-memory v2 tree with a fake knob.
func BenchmarkApply(b *testing.B) {
	b.Run("live", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Apply(Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fixture", func(b *testing.B) {
		te := newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", ""))
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

// BenchmarkTick is one refresh tick of GOMEMLIMIT when nothing changed.
func BenchmarkTick(b *testing.B) {
	te := newTestEnv(&fakeKnob{value: noLimit}, nil)
	te.src.set(memLimits(512*MiB, 0))
	fit, err := Apply(te.opts(Options{Refresh: time.Hour}))
	if err != nil {
		b.Fatal(err)
	}
	defer stop(fit)
	lim := memLimits(512*MiB, 0)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fit.tick(fit.f, now, lim, nil)
	}
}

// BenchmarkStatus is a Status that reads the memory events: of the limited
// cgroup of the stats-v2 fixture tree on disk (events in memory.events),
// and without a cgroup limit (nothing to read).
func BenchmarkStatus(b *testing.B) {
	for _, name := range []string{"stats-v2", "no-limit"} {
		b.Run(name, func(b *testing.B) {
			te := newTestEnv(&fakeKnob{value: noLimit}, v2FS("", "", ""))
			if name != "no-limit" {
				fsys := os.DirFS(filepath.Join("..", "cgroup", "testdata", name))
				te.fsys, te.cgroups = fsys, fsys
				te.src.setReading(cgroup.ReadFS(fsys))
			}
			fit, err := Apply(te.opts(Options{}))
			if err != nil {
				b.Fatal(err)
			}
			if got := fit.Status().HasEvents; got != (name != "no-limit") {
				b.Fatalf("HasEvents %v", got)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fit.Status()
			}
		})
	}
}

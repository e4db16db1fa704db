package rootfs_test

import (
	"os"
	"testing"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rootfs"
)

// BenchmarkReadFS compares cgroup.ReadFS of this machine over rootfs.FS and over
// os.DirFS("/"), interleaved by sub-benchmark.
func BenchmarkReadFS(b *testing.B) {
	for _, bc := range []struct {
		name string
		fsys func() any
	}{
		{"rootfs", func() any { return rootfs.FS() }},
		{"os.DirFS", func() any { return os.DirFS("/") }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fsys := rootfs.FS()
			if bc.name == "os.DirFS" {
				fsys = os.DirFS("/")
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := cgroup.ReadFS(fsys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRead measures Read on the live system: what maxprocs.Apply and
// memlimit.Apply each pay once.
func BenchmarkRead(b *testing.B) {
	if _, err := Read(); errors.Is(err, ErrNoCgroup) {
		b.Skipf("skipped: no cgroup here: %v", err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatcherRead measures one poll of a Watcher on the live system.
func BenchmarkWatcherRead(b *testing.B) {
	w, err := NewWatcher(os.DirFS("/"))
	if errors.Is(err, ErrNoCgroup) {
		b.Skipf("skipped: no cgroup here: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := w.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFS measures ReadFS on fixtures with five-level hierarchies,
// read from ordinary files.
func BenchmarkReadFS(b *testing.B) {
	for _, name := range []string{"v1-kubepods-host", "v2-kubepods-host"} {
		fsys := os.DirFS(filepath.Join("testdata", name))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ReadFS(fsys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFindMount measures the mountinfo scan on a WSL-style table with a
// 16 KB overlay line.
func BenchmarkFindMount(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "wsl", "proc", "self", "mountinfo"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, ok := findMount(data, V2, "", "/user.slice"); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkFindMountsHybrid measures the mountinfo scan of Read for two
// controllers on a hybrid host's table (testdata/hybrid: 11 mounts, most of
// them cgroup hierarchies).
func BenchmarkFindMountsHybrid(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "hybrid", "proc", "self", "mountinfo"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		qs := [2]mountQuery{{version: V1, ctrl: "cpu", path: "/user.slice"}, {version: V1, ctrl: "memory", path: "/user.slice"}}
		findMounts(data, qs[:])
		if qs[0].point == "" || qs[1].point == "" {
			b.Fatal("no mount found")
		}
	}
}

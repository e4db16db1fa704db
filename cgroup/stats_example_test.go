package cgroup_test

import (
	"fmt"
	"testing/fstest"

	"github.com/fitgo/fitgo/cgroup"
)

// The throttled share of CPU periods between two readings of a container
// limited to half a CPU, and its working set against its memory limit.
func ExampleWatcher_Stats() {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/self/cgroup":                 file("0::/app\n"),
		"proc/self/mountinfo":              file("35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/app/cpu.max":        file("50000 100000\n"),
		"sys/fs/cgroup/app/memory.max":     file("268435456\n"),
		"sys/fs/cgroup/app/memory.current": file("104857600\n"),
		"sys/fs/cgroup/app/memory.stat":    file("anon 73400320\nfile 31457280\ninactive_file 20971520\n"),
		"sys/fs/cgroup/app/cpu.stat":       file("usage_usec 1000000\nnr_periods 100\nnr_throttled 10\nthrottled_usec 200000\n"),
	}
	w, err := cgroup.NewWatcher(fsys)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	before, err := w.Stats()
	if err != nil {
		fmt.Println(err)
		return
	}
	fsys["sys/fs/cgroup/app/cpu.stat"].Data = []byte("usage_usec 1500000\nnr_periods 110\nnr_throttled 16\nthrottled_usec 500000\n")
	lim, err := w.Read()
	if err != nil {
		fmt.Println(err)
		return
	}
	after, err := w.Stats()
	if err != nil {
		fmt.Println(err)
		return
	}
	periods := after.CPU.Periods - before.CPU.Periods
	throttled := after.CPU.ThrottledPeriods - before.CPU.ThrottledPeriods
	fmt.Printf("%d of %d periods throttled, %v throttled\n", throttled, periods, after.CPU.ThrottledTime-before.CPU.ThrottledTime)
	max, _ := lim.MemoryMax()
	fmt.Printf("working set %d MiB of %d MiB\n", after.Memory.WorkingSet>>20, max>>20)
	fmt.Println("pressure:", after.Pressure.Dir != "")
	// Output:
	// 6 of 10 periods throttled, 300ms throttled
	// working set 80 MiB of 256 MiB
	// pressure: false
}

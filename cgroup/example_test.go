package cgroup_test

import (
	"fmt"
	"testing/fstest"

	"github.com/fitgo/fitgo/cgroup"
)

// A Kubernetes pod on a cgroup v2 node seen from the host cgroup namespace:
// the limits are on the pod's slice, not on the container's scope, so
// reading only the leaf, as the Go runtime does, would find no limit.
func ExampleReadFS() {
	pod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
	ctr := pod + "/cri-containerd-c1.scope"
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/self/cgroup":                        file("0::" + ctr + "\n"),
		"proc/self/mountinfo":                     file("35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"),
		"sys/fs/cgroup" + pod + "/cpu.max":        file("150000 100000\n"),
		"sys/fs/cgroup" + pod + "/memory.max":     file("536870912\n"),
		"sys/fs/cgroup" + ctr + "/cpu.max":        file("max 100000\n"),
		"sys/fs/cgroup" + ctr + "/memory.max":     file("max\n"),
		"sys/fs/cgroup" + ctr + "/memory.high":    file("402653184\n"),
		"sys/fs/cgroup/kubepods.slice/memory.max": file("24696061952\n"),
	}

	lim, err := cgroup.ReadFS(fsys)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cgroup", lim.CPU.Version, lim.CPU.Dir)
	if cores, ok := lim.CPUQuota(); ok {
		fmt.Printf("cpu:    %.2f cores (%v per %v) from %s\n", cores, lim.CPU.Quota, lim.CPU.Period, lim.CPU.Source)
	}
	if max, ok := lim.MemoryMax(); ok {
		fmt.Printf("memory: %d MiB from %s\n", max>>20, lim.Memory.MaxSource)
	}
	if high, ok := lim.MemoryHigh(); ok {
		fmt.Printf("high:   %d MiB from %s\n", high>>20, lim.Memory.HighSource)
	}
	// Output:
	// cgroup v2 /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-c1.scope
	// cpu:    1.50 cores (150ms per 100ms) from /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice
	// memory: 512 MiB from /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice
	// high:   384 MiB from /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-c1.scope
}

// A Docker container on cgroup v1 sees only its own cgroup: the mount root
// is the container's path, and a limit set above it shows only in
// hierarchical_memory_limit.
func ExampleReadFS_v1() {
	id := "/docker/3f6a2c9b8e1d"
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/self/cgroup": file("11:memory:" + id + "\n4:cpu,cpuacct:" + id + "\n1:name=systemd:" + id + "\n"),
		"proc/self/mountinfo": file(
			"1350 1348 0:33 " + id + " /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:16 - cgroup cgroup rw,cpu,cpuacct\n" +
				"1351 1348 0:34 " + id + " /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:17 - cgroup cgroup rw,memory\n"),
		"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  file("50000\n"),
		"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": file("100000\n"),
		"sys/fs/cgroup/memory/memory.limit_in_bytes":  file("9223372036854771712\n"),
		"sys/fs/cgroup/memory/memory.stat":            file("cache 0\nrss 0\nhierarchical_memory_limit 268435456\n"),
	}
	lim, err := cgroup.ReadFS(fsys)
	if err != nil {
		fmt.Println(err)
		return
	}
	cores, _ := lim.CPUQuota()
	max, _ := lim.MemoryMax()
	_, hasHigh := lim.MemoryHigh()
	fmt.Println(lim.CPU.Version, "cpu", cores, "from", lim.CPU.Source)
	fmt.Println(lim.Memory.Version, "memory", max>>20, "MiB from", lim.Memory.MaxSource, "high:", hasHigh)
	// Output:
	// v1 cpu 0.5 from /sys/fs/cgroup/cpu,cpuacct
	// v1 memory 256 MiB from /sys/fs/cgroup/memory high: false
}

// A malformed file is an error naming the file and line, and it only takes
// away the limit of its own controller.
func Example_malformedFile() {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/self/cgroup":         file("0::/\n"),
		"proc/self/mountinfo":      file("30 25 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/cpu.max":    file("200000 100000\n"),
		"sys/fs/cgroup/memory.max": file("lots\n"),
	}
	lim, err := cgroup.ReadFS(fsys)
	fmt.Println(err)
	cores, ok := lim.CPUQuota()
	fmt.Println(cores, ok)
	// Output:
	// cgroup: /sys/fs/cgroup/memory.max:1: invalid memory limit "lots"
	// 2 true
}

// A Watcher follows limit changes, such as a Kubernetes in-place pod resize,
// by re-reading the files it keeps open.
func ExampleWatcher() {
	fsys := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"proc/self/mountinfo":      {Data: []byte("30 25 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup/cpu.max":    {Data: []byte("200000 100000\n")},
		"sys/fs/cgroup/memory.max": {Data: []byte("1073741824\n")},
	}
	w, err := cgroup.NewWatcher(fsys)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	for _, cpuMax := range []string{"200000 100000\n", "50000 100000\n", "max 100000\n"} {
		fsys["sys/fs/cgroup/cpu.max"].Data = []byte(cpuMax) // the kubelet resizes the pod
		lim, err := w.Read()
		if err != nil {
			fmt.Println(err)
			return
		}
		cores, ok := lim.CPUQuota()
		fmt.Println(cores, ok)
	}
	// Output:
	// 2 true
	// 0.5 true
	// 0 false
}

// Read is what a program calls: the limits of the calling process.
func ExampleRead() {
	lim, err := cgroup.Read()
	if err != nil {
		fmt.Println("no cgroup limits:", err)
		return
	}
	if cores, ok := lim.CPUQuota(); ok {
		fmt.Printf("CPU limit %.2f cores, set by %s\n", cores, lim.CPU.Source)
	}
	if max, ok := lim.MemoryMax(); ok {
		fmt.Printf("memory limit %d bytes, set by %s\n", max, lim.Memory.MaxSource)
	}
}

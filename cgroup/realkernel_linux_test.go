//go:build linux

package cgroup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real-kernel test runs a copy of the test binary (TestHelperProcess)
// inside cgroups it creates. These variables pass the directories.
const (
	helperEnv    = "FITGO_CGROUP_HELPER"
	helperCPUEnv = "FITGO_CGROUP_HELPER_CPU"
	helperMemEnv = "FITGO_CGROUP_HELPER_MEM"
	resultMarker = "FITGO_CGROUP_RESULT "
	burntMarker  = "FITGO_CGROUP_BURNT"
)

// helperResult is what the helper process reports, as one JSON line.
type helperResult struct {
	Read      Limits
	ReadErr   string
	Watch     Limits
	WatchErr  string
	Stat      Stats
	StatErr   string
	SelfProcs string // the helper's /proc/self/cgroup
}

// TestRealKernelV1 creates a parent cgroup limited to 0.5 CPU and 300 MiB
// with an unlimited child in the v1 cpu and memory hierarchies, runs a
// process in the child, and checks that it finds the parent's limits: the
// case the Go runtime and automaxprocs miss. Then it changes the limits and
// checks that the process's Watcher sees the change. On the way it checks
// ReadStatsDir and Watcher.Stats on real, throttled cgroups.
func TestRealKernelV1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating cgroups needs root")
	}
	self, err := Read()
	if err != nil {
		t.Skipf("skipped: no cgroup information here: %v", err)
	}
	if self.CPU.Version != V1 || self.Memory.Version != V1 {
		t.Skipf("skipped: needs v1 cpu and memory hierarchies; this system has cpu %v, memory %v (real v2 runs in the qemu rig)",
			self.CPU.Version, self.Memory.Version)
	}
	name := fmt.Sprintf("fitgo-cgroup-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cpuParent := filepath.Join(self.CPU.Mount, name)
	memParent := filepath.Join(self.Memory.Mount, name)
	cpuChild, memChild := filepath.Join(cpuParent, "child"), filepath.Join(memParent, "child")
	// Cleanups run last-in first-out: children before parents.
	for _, dir := range []string{cpuParent, memParent, cpuChild, memChild} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission) {
				t.Skipf("skipped: no writable v1 hierarchy: %v", err)
			}
			require.NoError(t, err)
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
	}
	writeFile(t, filepath.Join(cpuParent, "cpu.cfs_period_us"), "100000")
	writeFile(t, filepath.Join(cpuParent, "cpu.cfs_quota_us"), "50000")
	writeFile(t, filepath.Join(memParent, "memory.limit_in_bytes"), strconv.Itoa(300*mib))
	// First the child is held to 1 ms per 100 ms, so that it is throttled
	// for sure while the helper burns CPU, however busy the machine is.
	writeFile(t, filepath.Join(cpuChild, "cpu.cfs_period_us"), "100000")
	writeFile(t, filepath.Join(cpuChild, "cpu.cfs_quota_us"), "1000")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperCPUEnv+"="+cpuChild, helperMemEnv+"="+memChild)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}()
	out := bufio.NewScanner(stdout)
	out.Buffer(nil, 1<<20)

	// The helper has burnt CPU in the child: real throttling statistics.
	readLine(t, out, burntMarker)
	child, err := ReadStatsDir(os.DirFS("/"), cpuChild)
	require.NoError(t, err)
	childStat := child.CPU
	t.Logf("child cpu.stat after the burn: %+v", childStat)
	assert.Equal(t, cpuChild, childStat.Dir)
	assert.Positive(t, childStat.Periods)
	assert.Positive(t, childStat.ThrottledPeriods)
	assert.Positive(t, childStat.ThrottledTime)
	assert.False(t, childStat.HasUsage, "cpuacct is not mounted with cpu here")
	childMem, err := ReadStatsDir(os.DirFS("/"), memChild)
	require.NoError(t, err)
	assert.Equal(t, memChild, childMem.Memory.Dir)
	assert.Positive(t, childMem.Memory.Usage, "the helper's pages are charged to the child")
	assert.True(t, childMem.Memory.HasEvents)
	assert.Empty(t, childMem.CPU.Dir, "no cpu.stat in the memory hierarchy")

	// Now the child has no limit of its own: the parent's is the effective one.
	writeFile(t, filepath.Join(cpuChild, "cpu.cfs_quota_us"), "-1")
	_, err = io.WriteString(stdin, "report\n")
	require.NoError(t, err)
	first := readResult(t, out)
	t.Logf("helper's /proc/self/cgroup:\n%s", first.SelfProcs)
	require.Empty(t, first.ReadErr)
	require.Empty(t, first.WatchErr)
	require.Empty(t, first.StatErr)
	assert.Equal(t, settled(first.Watch), settled(first.Read))
	for _, lim := range []Limits{first.Read, first.Watch} {
		assert.Equal(t, V1, lim.CPU.Version)
		assert.Equal(t, cpuChild, lim.CPU.Dir)
		cores, ok := lim.CPUQuota()
		assert.True(t, ok)
		assert.Equal(t, 0.5, cores)
		assert.Equal(t, cpuParent, lim.CPU.Source, "the parent imposed the CPU limit")
		assert.Equal(t, 50*time.Millisecond, lim.CPU.Quota)
		assert.Equal(t, 100*time.Millisecond, lim.CPU.Period)

		assert.Equal(t, V1, lim.Memory.Version)
		assert.Equal(t, memChild, lim.Memory.Dir)
		max, ok := lim.MemoryMax()
		assert.True(t, ok)
		assert.Equal(t, int64(300*mib), max)
		assert.Equal(t, memParent, lim.Memory.MaxSource, "the parent imposed the memory limit")
		_, ok = lim.MemoryHigh()
		assert.False(t, ok)
	}
	// The helper's Watcher.Stats read the cpu.stat of the parent, whose quota
	// is the effective one; the parent's bandwidth timer ran while the child
	// burnt CPU. Memory is read where the limit is, the parent too.
	parent, err := ReadStatsDir(os.DirFS("/"), cpuParent)
	require.NoError(t, err)
	parentStat := parent.CPU
	t.Logf("parent cpu.stat: %+v", parentStat)
	assert.Equal(t, cpuParent, first.Stat.CPU.Dir)
	assert.Positive(t, first.Stat.CPU.Periods)
	assert.GreaterOrEqual(t, parentStat.Periods, first.Stat.CPU.Periods)
	assert.GreaterOrEqual(t, parentStat.ThrottledPeriods, first.Stat.CPU.ThrottledPeriods)
	assert.GreaterOrEqual(t, parentStat.ThrottledTime, first.Stat.CPU.ThrottledTime)
	assert.Equal(t, memParent, first.Stat.Memory.Dir)
	assert.Positive(t, first.Stat.Memory.Usage)
	assert.LessOrEqual(t, first.Stat.Memory.WorkingSet, first.Stat.Memory.Usage)
	assert.True(t, first.Stat.Memory.HasPeak)
	assert.GreaterOrEqual(t, first.Stat.Memory.Peak, first.Stat.Memory.Usage)
	assert.True(t, first.Stat.Memory.HasEvents)

	// Resize: a tighter quota on the child with another period, and less
	// memory on the parent. The helper's Watcher must see both.
	writeFile(t, filepath.Join(cpuChild, "cpu.cfs_period_us"), "50000")
	writeFile(t, filepath.Join(cpuChild, "cpu.cfs_quota_us"), "10000")
	writeFile(t, filepath.Join(memParent, "memory.limit_in_bytes"), strconv.Itoa(200*mib))
	_, err = io.WriteString(stdin, "again\n")
	require.NoError(t, err)
	second := readResult(t, out)
	require.Empty(t, second.WatchErr)
	cores, ok := second.Watch.CPUQuota()
	assert.True(t, ok)
	assert.InDelta(t, 0.2, cores, 1e-12)
	assert.Equal(t, cpuChild, second.Watch.CPU.Source)
	assert.Equal(t, 50*time.Millisecond, second.Watch.CPU.Period)
	max, _ := second.Watch.MemoryMax()
	assert.Equal(t, int64(200*mib), max)
	assert.Equal(t, memParent, second.Watch.Memory.MaxSource)
	assert.Equal(t, settled(second.Read), settled(second.Watch), "the Watcher agrees with Read")

	// The process is moved to another cgroup: the Watcher notices by itself
	// and reads the new cgroup's limits.
	moved := filepath.Join(cpuParent, "moved")
	require.NoError(t, os.Mkdir(moved, 0o755))
	t.Cleanup(func() { removeCgroup(t, moved) })
	writeFile(t, filepath.Join(moved, "cpu.cfs_period_us"), "100000")
	writeFile(t, filepath.Join(moved, "cpu.cfs_quota_us"), "25000")
	writeFile(t, filepath.Join(moved, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid))
	_, err = io.WriteString(stdin, "again\n")
	require.NoError(t, err)
	third := readResult(t, out)
	require.Empty(t, third.WatchErr)
	assert.Equal(t, moved, third.Watch.CPU.Dir)
	assert.Equal(t, moved, third.Watch.CPU.Source)
	cores, ok = third.Watch.CPUQuota()
	assert.True(t, ok)
	assert.Equal(t, 0.25, cores)
	assert.Equal(t, settled(third.Read), settled(third.Watch), "the Watcher agrees with Read after the move")
}

// settled is lim without the live usage figures of its Levels, which
// change between two readings: the rest must agree.
func settled(lim Limits) Limits {
	m := &lim.Memory
	m.Levels, m.RssAnon, m.LazyFree = slices.Clone(m.Levels), 0, 0
	for i := range m.Levels {
		m.Levels[i].Usage, m.Levels[i].File, m.Levels[i].Lazy = 0, 0, 0
	}
	return lim
}

// stackedEnv passes TestHelperStacked the memory cgroup to bind-mount.
const stackedEnv = "FITGO_CGROUP_HELPER_STACKED"

// TestRealKernelV1StackedBind: in a private mount namespace, the process's
// own v1 memory cgroup (256 MiB) is bind-mounted over /sys/fs/cgroup/memory,
// on top of the whole hierarchy mounted there, as a v1 container sees it.
// Read and the Watcher must find the 256 MiB through the mount on top.
func TestRealKernelV1StackedBind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating cgroups and mounts needs root")
	}
	self, err := Read()
	if err != nil || self.Memory.Version != V1 || self.Memory.MountRoot != "/" {
		t.Skipf("skipped: needs a v1 memory hierarchy mounted whole; this system has %+v (%v)", self.Memory.where(), err)
	}
	name := fmt.Sprintf("fitgo-cgroup-stack-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := filepath.Join(self.Memory.Mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission) {
			t.Skipf("skipped: no writable v1 memory hierarchy: %v", err)
		}
		require.NoError(t, err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	writeFile(t, filepath.Join(dir, "memory.limit_in_bytes"), strconv.Itoa(256*mib))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperStacked$", "-test.count=1")
	cmd.Env = append(os.Environ(), stackedEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // and / made private
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	out := bufio.NewScanner(stdout)
	out.Buffer(nil, 1<<20)
	r := readResult(t, out)
	require.NoError(t, cmd.Wait())

	t.Logf("helper's /proc/self/cgroup:\n%s", r.SelfProcs)
	require.Empty(t, r.ReadErr)
	require.Empty(t, r.WatchErr)
	for _, lim := range []Limits{r.Read, r.Watch} {
		assert.Equal(t, hierarchy{Version: V1, Path: "/" + name, Mount: self.Memory.Mount, MountRoot: "/" + name, Dir: self.Memory.Mount},
			lim.Memory.where())
		max, ok := lim.MemoryMax()
		assert.True(t, ok, "the limit of the mount on top")
		assert.Equal(t, int64(256*mib), max)
		assert.Equal(t, self.Memory.Mount, lim.Memory.MaxSource)
	}
}

// TestHelperStacked is the process that TestRealKernelV1StackedBind starts
// in a mount namespace of its own; it does nothing in a normal test run.
func TestHelperStacked(t *testing.T) {
	dir := os.Getenv(stackedEnv)
	if dir == "" {
		t.Skip("skipped: helper process of TestRealKernelV1StackedBind")
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		t.Fatalf("joining the cgroup: %v", err)
	}
	if err := syscall.Mount(dir, filepath.Dir(dir), "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	var r helperResult
	var err error
	r.Read, err = Read()
	r.ReadErr = errString(err)
	w, err := NewWatcher(os.DirFS("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Watch, err = w.Read()
	r.WatchErr = errString(err)
	printResult(t, r)
}

// readLine returns the rest of the next line of the helper's output that
// starts with marker, logging the lines before it.
func readLine(t *testing.T, out *bufio.Scanner, marker string) string {
	t.Helper()
	for out.Scan() {
		line := out.Text()
		if rest, ok := strings.CutPrefix(line, marker); ok {
			return rest
		}
		t.Logf("helper: %s", line)
	}
	t.Fatalf("helper ended before %q: %v", marker, out.Err())
	return ""
}

func readResult(t *testing.T, out *bufio.Scanner) helperResult {
	t.Helper()
	var r helperResult
	require.NoError(t, json.Unmarshal([]byte(readLine(t, out, resultMarker)), &r))
	return r
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
}

// removeCgroup removes a cgroup directory (rmdir, as cgroupfs wants), trying
// again for a while if it is still busy with an exiting process.
func removeCgroup(t *testing.T, dir string) {
	var err error
	for i := 0; i < 50; i++ {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("could not remove cgroup %s: %v", dir, err)
}

// TestHelperProcess is the process that TestRealKernelV1 starts; it does
// nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("skipped: helper process of TestRealKernelV1")
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, env := range []string{helperCPUEnv, helperMemEnv} {
		if err := os.WriteFile(filepath.Join(os.Getenv(env), "cgroup.procs"), pid, 0); err != nil {
			t.Fatalf("joining the cgroup: %v", err)
		}
	}
	// Burn 3 ms of CPU time on two threads, under a quota of 1 ms per 100 ms:
	// at least three periods, each throttled.
	burnCPU(t, 3*time.Millisecond, 2)
	fmt.Println(burntMarker)
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return
	}
	w, err := NewWatcher(os.DirFS("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	report := func() {
		var r helperResult
		var err error
		r.Read, err = Read()
		r.ReadErr = errString(err)
		r.Watch, err = w.Read()
		r.WatchErr = errString(err)
		r.Stat, err = w.Stats()
		r.StatErr = errString(err)
		printResult(t, r)
	}
	report()
	for in.Scan() {
		report()
	}
}

// printResult prints r, with the helper's /proc/self/cgroup, as one line for
// readResult.
func printResult(t *testing.T, r helperResult) {
	procs, _ := os.ReadFile("/proc/self/cgroup")
	r.SelfProcs = string(procs)
	r.Read.CPU.Err, r.Read.Memory.Err, r.Watch.CPU.Err, r.Watch.Memory.Err = nil, nil, nil, nil
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", resultMarker, data)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// burnCPU spins on n goroutines until the process has used cpu of CPU time
// (or ten seconds have passed).
func burnCPU(t *testing.T, cpu time.Duration, n int) {
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, deadline := used(), time.Now().Add(10*time.Second)
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			for x := 0; ; x++ {
				select {
				case <-done:
					return
				default:
				}
				for j := 0; j < 1e4; j++ {
					x ^= j * x
				}
			}
		}()
	}
	for used()-start < cpu && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
}

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
)

// helperResult is what the helper process reports, as one JSON line.
type helperResult struct {
	Read      Limits
	ReadErr   string
	Watch     Limits
	WatchErr  string
	Stat      CPUStat
	StatErr   string
	SelfProcs string // the helper's /proc/self/cgroup
}

// TestRealKernelV1 creates a parent cgroup limited to 0.5 CPU and 300 MiB
// with an unlimited child in the v1 cpu and memory hierarchies, runs a
// process in the child, and checks that it finds the parent's limits: the
// case the Go runtime and automaxprocs miss. Then it changes the parent's
// limits and checks that the process's Watcher sees the change.
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

	first := readResult(t, out)
	t.Logf("helper's /proc/self/cgroup:\n%s", first.SelfProcs)
	require.Empty(t, first.ReadErr)
	require.Empty(t, first.WatchErr)
	require.Empty(t, first.StatErr)
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
	// The helper burnt CPU under a 0.5 CPU quota: the parent was throttled,
	// and ReadCPUStat in the helper read the parent's cpu.stat.
	assert.Positive(t, first.Stat.Periods)
	assert.Positive(t, first.Stat.ThrottledPeriods)
	assert.Positive(t, first.Stat.ThrottledTime)
	parentStat, err := ReadCPUStatDir(os.DirFS("/"), cpuParent)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, parentStat.Periods, first.Stat.Periods)
	assert.GreaterOrEqual(t, parentStat.ThrottledPeriods, first.Stat.ThrottledPeriods)
	assert.GreaterOrEqual(t, parentStat.ThrottledTime, first.Stat.ThrottledTime)
	childStat, err := ReadCPUStatDir(os.DirFS("/"), cpuChild)
	require.NoError(t, err, "cpu.stat of an unlimited cgroup parses too")
	t.Logf("parent cpu.stat %+v, child %+v", parentStat, childStat)

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
	assert.Equal(t, second.Read, second.Watch, "the Watcher agrees with Read")
}

func readResult(t *testing.T, out *bufio.Scanner) helperResult {
	t.Helper()
	for out.Scan() {
		line := out.Text()
		if data, ok := strings.CutPrefix(line, resultMarker); ok {
			var r helperResult
			require.NoError(t, json.Unmarshal([]byte(data), &r))
			return r
		}
		t.Logf("helper: %s", line)
	}
	t.Fatalf("helper ended without a result: %v", out.Err())
	return helperResult{}
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
	// Burn 300 ms of CPU time on four threads: they want far more than the
	// 50 ms per 100 ms the parent allows, so periods end throttled even when
	// other processes compete for the CPUs.
	burnCPU(t, 300*time.Millisecond, 4)
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
		r.Stat, err = ReadCPUStat()
		r.StatErr = errString(err)
		procs, _ := os.ReadFile("/proc/self/cgroup")
		r.SelfProcs = string(procs)
		r.Read.CPU.Err, r.Read.Memory.Err, r.Watch.CPU.Err, r.Watch.Memory.Err = nil, nil, nil, nil
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s%s\n", resultMarker, data)
	}
	report()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		report()
	}
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

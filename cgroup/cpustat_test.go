package cgroup

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadCPUStatFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		want    CPUStat
	}{
		{"v2-kubepods-host", CPUStat{Periods: 1200, ThrottledPeriods: 300, ThrottledTime: 45 * time.Second,
			Bursts: 2, BurstTime: 1500 * time.Microsecond, Usage: 5 * time.Second, HasUsage: true}},
		{"v2-private-ns", CPUStat{Periods: 420, ThrottledPeriods: 17, ThrottledTime: 912345 * time.Microsecond,
			Usage: 8123456 * time.Microsecond, HasUsage: true}},
		{"host-root", CPUStat{Usage: 2 * time.Second, HasUsage: true}},
		{"v1-docker", CPUStat{Periods: 3100, ThrottledPeriods: 412, ThrottledTime: 20615190034,
			Usage: 71333165549, HasUsage: true}},
		{"v1-kubepods-host", CPUStat{Periods: 500, ThrottledPeriods: 120, ThrottledTime: 6 * time.Second,
			Usage: 25 * time.Second, HasUsage: true}},
		{"v1-cfs-period", CPUStat{Periods: 80, ThrottledPeriods: 9, ThrottledTime: 123456789,
			Usage: 987654321, HasUsage: true}},
		// cpuacct is a hierarchy of its own there: no usage next to cpu.stat.
		{"hybrid", CPUStat{Periods: 10, ThrottledPeriods: 1, ThrottledTime: 5 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			got, err := readCPUStatFS(os.DirFS(filepath.Join("testdata", tc.fixture)))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadCPUStatErrors(t *testing.T) {
	t.Run("no cgroup", func(t *testing.T) {
		_, err := readCPUStatFS(fstest.MapFS{})
		assert.ErrorIs(t, err, ErrNoCgroup)
	})
	t.Run("outside the namespace", func(t *testing.T) {
		_, err := readCPUStatFS(os.DirFS(filepath.Join("testdata", "outside-ns")))
		assert.ErrorIs(t, err, ErrNoCgroup)
	})
	t.Run("no cpu.stat", func(t *testing.T) {
		_, err := readCPUStatFS(os.DirFS(filepath.Join("testdata", "v1-hierarchical")))
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.Contains(t, err.Error(), "/sys/fs/cgroup/cpu,cpuacct/cpu.stat")
	})
	t.Run("bad cpu.max", func(t *testing.T) {
		_, err := readCPUStatFS(mapFS(with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "x\n"})))
		var pe *parseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/sys/fs/cgroup/app/cpu.max", pe.File)
	})
	t.Run("bad cpu.stat", func(t *testing.T) {
		_, err := readCPUStatFS(mapFS(with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.stat": "usage_usec 1\nnr_periods x\n"})))
		var pe *parseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/sys/fs/cgroup/app/cpu.stat", pe.File)
		assert.Equal(t, 2, pe.Line)
	})
	t.Run("bad cpuacct.usage", func(t *testing.T) {
		_, err := readCPUStatFS(mapFS(with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpuacct.usage": "-\n"})))
		var pe *parseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/app/cpuacct.usage", pe.File)
	})
}

func TestReadCPUStatDir(t *testing.T) {
	fsys := os.DirFS(filepath.Join("testdata", "v1-kubepods-host"))
	dir := "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod0d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f80"
	got, err := ReadCPUStatDir(fsys, dir)
	require.NoError(t, err)
	assert.Equal(t, CPUStat{Periods: 500, ThrottledPeriods: 120, ThrottledTime: 6 * time.Second,
		Usage: 25 * time.Second, HasUsage: true}, got)

	got2, err := ReadCPUStatDir(fsys, dir+"/")
	require.NoError(t, err)
	assert.Equal(t, got, got2)

	_, err = ReadCPUStatDir(fsys, "sys/fs/cgroup")
	assert.ErrorContains(t, err, "not an absolute path")
	_, err = ReadCPUStatDir(fsys, "/nowhere")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestCPUStatSub(t *testing.T) {
	prev := CPUStat{Periods: 10, ThrottledPeriods: 2, ThrottledTime: time.Second, Bursts: 1, BurstTime: time.Millisecond,
		Usage: 3 * time.Second, HasUsage: true}
	cur := CPUStat{Periods: 25, ThrottledPeriods: 7, ThrottledTime: 3 * time.Second, Bursts: 1, BurstTime: 3 * time.Millisecond,
		Usage: 5 * time.Second, HasUsage: true}
	assert.Equal(t, CPUStat{Periods: 15, ThrottledPeriods: 5, ThrottledTime: 2 * time.Second, BurstTime: 2 * time.Millisecond,
		Usage: 2 * time.Second, HasUsage: true}, cur.Sub(prev))

	// Swapped arguments: counters never go down, so nothing wraps.
	assert.Equal(t, CPUStat{HasUsage: true}, prev.Sub(cur))

	noUsage := cur
	noUsage.HasUsage, noUsage.Usage = false, 0
	d := noUsage.Sub(prev)
	assert.False(t, d.HasUsage)
	assert.Zero(t, d.Usage)
	assert.Equal(t, CPUStat{}, cur.Sub(cur).Sub(CPUStat{}).Sub(CPUStat{Periods: 1}))
}

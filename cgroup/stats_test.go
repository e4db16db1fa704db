package cgroup

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpuStats and memStats are the types of Stats.CPU and Stats.Memory, for
// the tables.
type (
	cpuStats = struct {
		Dir              string
		Periods          uint64
		ThrottledPeriods uint64
		ThrottledTime    time.Duration
		Bursts           uint64
		BurstTime        time.Duration
		Usage            time.Duration
		HasUsage         bool
	}
	memEvents = struct {
		Low, High, Max, OOM, OOMKill, OOMGroupKill uint64
	}
	memStats = struct {
		Dir        string
		Usage      int64
		WorkingSet int64
		Peak       int64
		HasPeak    bool
		Events     memEvents
		HasEvents  bool
	}
)

var cpuStatTests = []struct {
	name    string
	in      string
	want    cpuStats
	errLine int
}{
	{
		name: "v1",
		in:   "nr_periods 3100\nnr_throttled 412\nthrottled_time 20615190034\nnr_bursts 3\nburst_time 1500000\n",
		want: cpuStats{Periods: 3100, ThrottledPeriods: 412, ThrottledTime: 20615190034, Bursts: 3, BurstTime: 1500 * time.Microsecond},
	},
	{
		name: "v1 old kernel",
		in:   "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		want: cpuStats{},
	},
	{
		name: "v1 with schedstats lines",
		in:   "nr_periods 2\nnr_throttled 1\nthrottled_time 5\nwait_sum 123\n",
		want: cpuStats{Periods: 2, ThrottledPeriods: 1, ThrottledTime: 5},
	},
	{
		name: "v2",
		in: "usage_usec 8123456\nuser_usec 6000000\nsystem_usec 2123456\ncore_sched.force_idle_usec 0\n" +
			"nr_periods 420\nnr_throttled 17\nthrottled_usec 912345\nnr_bursts 1\nburst_usec 250\n",
		want: cpuStats{Periods: 420, ThrottledPeriods: 17, ThrottledTime: 912345 * time.Microsecond,
			Bursts: 1, BurstTime: 250 * time.Microsecond, Usage: 8123456 * time.Microsecond, HasUsage: true},
	},
	{
		name: "v2 without the cpu controller",
		in:   "usage_usec 2000000\nuser_usec 1500000\nsystem_usec 500000\n",
		want: cpuStats{Usage: 2 * time.Second, HasUsage: true},
	},
	{name: "empty", in: "", want: cpuStats{}},
	{name: "odd unknown lines", in: "\n\nfoo\n  \nbar baz qux\nnr_periods 1", want: cpuStats{Periods: 1}},
	{name: "bad count", in: "nr_periods 1\nnr_throttled -1\n", errLine: 2},
	{name: "bad time", in: "throttled_time 1.5\n", errLine: 1},
	{name: "missing value", in: "usage_usec\n", errLine: 1},
	{name: "usec overflow", in: "nr_periods 1\nthrottled_usec 9223372036854776\n", errLine: 2},
	{name: "ns at the limit", in: "throttled_time 9223372036854775807\n", want: cpuStats{ThrottledTime: 1<<63 - 1}},
	{name: "ns overflow", in: "throttled_time 9223372036854775808\n", errLine: 1},
	{name: "count overflow", in: "nr_periods 18446744073709551616\n", errLine: 1},
}

func TestParseCPUStat(t *testing.T) {
	for _, tc := range cpuStatTests {
		t.Run(tc.name, func(t *testing.T) {
			var s Stats
			err := parseCPUStat([]byte(tc.in), &s)
			if tc.errLine == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.want, s.CPU)
				return
			}
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, cpuStats{}, s.CPU)
		})
	}
}

// TestParseCount: a count such as cpuacct.usage, CPU time in nanoseconds.
func TestParseCount(t *testing.T) {
	for in, want := range map[string]int64{"71333165549\n": 71333165549, "0": 0, "9223372036854775807": 1<<63 - 1} {
		got, err := parseCount([]byte(in), "cpuacct.usage", math.MaxInt64)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "-5\n", "x\n", "1 2\n", "9223372036854775808\n", "--1\n"} {
		_, err := parseCount([]byte(in), "cpuacct.usage", math.MaxInt64)
		var pe *parseError
		assert.ErrorAs(t, err, &pe, "%q", in)
	}
}

// pressure builds a Pressure from the some and full lines' values.
func pressure(some, full [4]float64, hasFull bool) Pressure {
	var p Pressure
	p.HasSome, p.HasFull = true, hasFull
	p.Some.Avg10, p.Some.Avg60, p.Some.Avg300, p.Some.Total = some[0], some[1], some[2], time.Duration(some[3])*time.Microsecond
	p.Full.Avg10, p.Full.Avg60, p.Full.Avg300, p.Full.Total = full[0], full[1], full[2], time.Duration(full[3])*time.Microsecond
	return p
}

var pressureTests = []struct {
	name    string
	in      string
	want    Pressure
	errLine int
}{
	{
		name: "cpu",
		in:   "some avg10=12.34 avg60=3.21 avg300=0.75 total=1234567\nfull avg10=11.00 avg60=3.00 avg300=0.70 total=1100000\n",
		want: pressure([4]float64{12.34, 3.21, 0.75, 1234567}, [4]float64{11, 3, 0.7, 1100000}, true),
	},
	{
		name: "before Linux 5.13: no full line",
		in:   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		want: pressure([4]float64{}, [4]float64{}, false),
	},
	{name: "100 percent", in: "some avg10=100.00 avg60=99.99 avg300=1 total=5\n", want: pressure([4]float64{100, 99.99, 1, 5}, [4]float64{}, false)},
	{name: "unknown line and key", in: "other x\nsome avg10=1.00 new=7 total=1\n", want: pressure([4]float64{1, 0, 0, 1}, [4]float64{}, false)},
	{name: "empty", in: "", want: Pressure{}},
	{name: "no equals", in: "some avg10\n", errLine: 1},
	{name: "bad average", in: "some avg10=1.2.3 total=1\n", errLine: 1},
	{name: "negative average", in: "full avg10=-1.00\n", errLine: 1},
	{name: "empty fraction", in: "some avg10=1.\n", errLine: 1},
	{name: "too many digits", in: "some avg10=1234567890123456\n", errLine: 1},
	{name: "bad total", in: "some total=1\nfull total=x\n", errLine: 2},
	{name: "total overflow", in: "some total=9223372036854776\n", errLine: 1},
}

func TestParsePressure(t *testing.T) {
	for _, tc := range pressureTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePressure([]byte(tc.in))
			if tc.errLine == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, Pressure{}, got)
		})
	}
}

var memoryEventsTests = []struct {
	name    string
	in      string
	want    memEvents
	errLine int
}{
	{name: "Linux 5.17", in: "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n", want: memEvents{1, 2, 3, 4, 5, 6}},
	{name: "older, no oom_group_kill", in: "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n", want: memEvents{Max: 12, OOM: 1, OOMKill: 1}},
	{name: "unknown key", in: "sock_throttled 9\nmax 1\n", want: memEvents{Max: 1}},
	{name: "empty", in: "", want: memEvents{}},
	{name: "bad value", in: "low 0\nmax -1\n", errLine: 2},
	{name: "missing value", in: "oom_kill\n", errLine: 1},
}

func TestParseMemoryEvents(t *testing.T) {
	for _, tc := range memoryEventsTests {
		t.Run(tc.name, func(t *testing.T) {
			var s Stats
			err := parseMemoryEvents([]byte(tc.in), &s)
			if tc.errLine == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.want, s.Memory.Events)
				return
			}
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, memEvents{}, s.Memory.Events)
		})
	}
}

var statValueTests = []struct {
	name, in, key string
	want          int64
	found         bool
	errLine       int
}{
	{name: "v2 memory.stat", in: "anon 1\nfile 2\ninactive_file 3\nactive_file 4\n", key: "inactive_file", want: 3, found: true},
	{name: "v1 total", in: "inactive_file 3\ntotal_inactive_file 9\n", key: "total_inactive_file", want: 9, found: true},
	{name: "oom_control", in: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", key: "oom_kill", want: 2, found: true},
	{name: "oom_control before Linux 4.13", in: "oom_kill_disable 0\nunder_oom 0\n", key: "oom_kill"},
	{name: "a prefix is not the key", in: "inactive_file_x 3\n", key: "inactive_file"},
	{name: "bad value", in: "anon 1\ninactive_file x\n", key: "inactive_file", errLine: 2},
	{name: "too large", in: "oom_kill 9223372036854775808\n", key: "oom_kill", errLine: 1},
}

func TestStatValue(t *testing.T) {
	for _, tc := range statValueTests {
		t.Run(tc.name, func(t *testing.T) {
			v, found, err := statValue([]byte(tc.in), tc.key, math.MaxInt64, "")
			if tc.errLine == 0 {
				require.NoError(t, err)
				assert.Equal(t, uint64(tc.want), v)
				assert.Equal(t, tc.found, found)
				return
			}
			checkErrLine(t, err, tc.errLine)
			assert.False(t, found)
		})
	}
}

// TestWorkingSet: the usage less the inactive page cache, never below zero.
func TestWorkingSet(t *testing.T) {
	for _, tc := range []struct {
		usage, inactive string
		want            int64
	}{{"10\n", "3", 7}, {"3\n", "10", 0}} {
		got, err := ReadStatsDir(mapFS(map[string]string{"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.current": tc.usage, "sys/fs/cgroup/memory.stat": "inactive_file " + tc.inactive + "\n"}), "/sys/fs/cgroup")
		require.NoError(t, err)
		assert.Equal(t, tc.want, got.Memory.WorkingSet, "%+v", tc)
	}
}

// The statistics of the two stats fixtures, in full.
var (
	statsV2 = func() Stats {
		var s Stats
		pod, ctr := "/sys/fs/cgroup/pod", "/sys/fs/cgroup/pod/ctr"
		s.CPU = cpuStats{Dir: pod, Periods: 30, ThrottledPeriods: 24, ThrottledTime: 1100 * time.Millisecond,
			Bursts: 1, BurstTime: 2 * time.Millisecond, Usage: 1700 * time.Millisecond, HasUsage: true}
		s.Memory = memStats{Dir: ctr, Usage: 52428800, WorkingSet: 52428800 - 12582912, Peak: 67108864, HasPeak: true,
			Events: memEvents{Max: 12, OOM: 1, OOMKill: 1}, HasEvents: true}
		s.Pressure.Dir = ctr
		s.Pressure.CPU = pressure([4]float64{12.34, 3.21, 0.75, 1234567}, [4]float64{11, 3, 0.7, 1100000}, true)
		s.Pressure.Memory = pressure([4]float64{0, 0.1, 0.02, 45000}, [4]float64{0, 0.05, 0.01, 30000}, true)
		s.Pressure.IO = pressure([4]float64{1.5, 0.4, 0.1, 250000}, [4]float64{1, 0.3, 0.05, 200000}, true)
		return s
	}()
	statsV1 = func() Stats {
		var s Stats
		s.CPU = cpuStats{Dir: "/sys/fs/cgroup/cpu,cpuacct", Periods: 15, ThrottledPeriods: 12, ThrottledTime: 950 * time.Millisecond,
			Usage: 1510 * time.Millisecond, HasUsage: true}
		s.Memory = memStats{Dir: "/sys/fs/cgroup/memory", Usage: 41943040, WorkingSet: 41943040 - 8388608, Peak: 62914560, HasPeak: true,
			Events: memEvents{Max: 3, OOMKill: 2}, HasEvents: true}
		return s
	}()
)

func watch(t testing.TB, fsys fs.FS) *Watcher {
	t.Helper()
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}

func fixture(name string) fs.FS { return os.DirFS(filepath.Join("testdata", name)) }

func TestWatcherStatsFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    Stats
	}{{"stats-v2", statsV2}, {"stats-v1", statsV1}} {
		t.Run(tc.fixture, func(t *testing.T) {
			w := watch(t, fixture(tc.fixture))
			got, err := w.Stats()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			// Again, from the open files.
			got, err = w.Stats()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The CPU statistics of the older fixtures: where the limit is set, else in
// the process's own cgroup.
func TestWatcherStatsCPU(t *testing.T) {
	tests := []struct {
		fixture string
		want    cpuStats
	}{
		{"v2-kubepods-host", cpuStats{Periods: 1200, ThrottledPeriods: 300, ThrottledTime: 45 * time.Second,
			Bursts: 2, BurstTime: 1500 * time.Microsecond, Usage: 5 * time.Second, HasUsage: true}},
		{"v2-private-ns", cpuStats{Dir: "/sys/fs/cgroup", Periods: 420, ThrottledPeriods: 17, ThrottledTime: 912345 * time.Microsecond,
			Usage: 8123456 * time.Microsecond, HasUsage: true}},
		{"host-root", cpuStats{Dir: "/sys/fs/cgroup", Usage: 2 * time.Second, HasUsage: true}},
		{"v1-docker", cpuStats{Dir: "/sys/fs/cgroup/cpu,cpuacct", Periods: 3100, ThrottledPeriods: 412, ThrottledTime: 20615190034,
			Usage: 71333165549, HasUsage: true}},
		{"v1-kubepods-host", cpuStats{Dir: "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod0d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f80",
			Periods: 500, ThrottledPeriods: 120, ThrottledTime: 6 * time.Second, Usage: 25 * time.Second, HasUsage: true}},
		{"v1-cfs-period", cpuStats{Dir: "/sys/fs/cgroup/cpu,cpuacct/batch/job", Periods: 80, ThrottledPeriods: 9, ThrottledTime: 123456789,
			Usage: 987654321, HasUsage: true}},
		// cpuacct is a hierarchy of its own there: no usage next to cpu.stat.
		{"hybrid", cpuStats{Dir: "/sys/fs/cgroup/cpu/user.slice/app.service", Periods: 10, ThrottledPeriods: 1, ThrottledTime: 5 * time.Millisecond}},
		// No cpu.stat: not available, not an error.
		{"v1-hierarchical", cpuStats{}},
		// The cgroup is outside the namespace: nothing to read.
		{"outside-ns", cpuStats{}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			w := watch(t, fixture(tc.fixture))
			lim, _ := w.Read()
			if tc.fixture == "v2-kubepods-host" {
				tc.want.Dir = lim.CPU.Source
			}
			got, err := w.Stats()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.CPU)
		})
	}
}

func TestReadStatsDir(t *testing.T) {
	fsys := fixture("v1-kubepods-host")
	dir := "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod0d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f80"
	got, err := ReadStatsDir(fsys, dir)
	require.NoError(t, err)
	assert.Equal(t, cpuStats{Dir: dir, Periods: 500, ThrottledPeriods: 120, ThrottledTime: 6 * time.Second,
		Usage: 25 * time.Second, HasUsage: true}, got.CPU)
	assert.Empty(t, got.Memory.Dir, "no memory files in a v1 cpu directory")
	assert.Empty(t, got.Pressure.Dir)

	got2, err := ReadStatsDir(fsys, dir+"/")
	require.NoError(t, err)
	assert.Equal(t, got, got2)

	_, err = ReadStatsDir(fsys, "sys/fs/cgroup")
	assert.ErrorContains(t, err, "not an absolute path")
	_, err = ReadStatsDir(fsys, "/nowhere")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A v2 directory has it all; the directory itself is read, not the
	// one with the limit.
	got, err = ReadStatsDir(fixture("stats-v2"), "/sys/fs/cgroup/pod/ctr")
	require.NoError(t, err)
	assert.Equal(t, statsV2.Memory, got.Memory)
	assert.Equal(t, statsV2.Pressure, got.Pressure)
	assert.Equal(t, cpuStats{Dir: "/sys/fs/cgroup/pod/ctr", Usage: 1690 * time.Millisecond, HasUsage: true}, got.CPU)

	// v1 memory.
	got, err = ReadStatsDir(fixture("stats-v1"), "/sys/fs/cgroup/memory")
	require.NoError(t, err)
	assert.Equal(t, statsV1.Memory, got.Memory)
	assert.Empty(t, got.CPU.Dir)
}

// failOpen fails to open the files named in fail with EMFILE.
type failOpen struct {
	fs.FS
	fail map[string]bool
}

func (f failOpen) Open(name string) (fs.File, error) {
	if f.fail[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.Open(name)
}

func TestStatsErrors(t *testing.T) {
	v2 := func(files map[string]string) fs.FS {
		return mapFS(with(v2Base, files))
	}
	t.Run("bad cpu.stat", func(t *testing.T) {
		w := watch(t, v2(map[string]string{
			"sys/fs/cgroup/app/cpu.stat":       "usage_usec 1\nnr_periods x\n",
			"sys/fs/cgroup/app/memory.current": "4096\n",
		}))
		s, err := w.Stats()
		var pe *parseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/sys/fs/cgroup/app/cpu.stat", pe.File)
		assert.Equal(t, 2, pe.Line)
		assert.Equal(t, cpuStats{}, s.CPU)
		assert.Equal(t, int64(4096), s.Memory.Usage, "the other parts are read")
		_, err = w.Read()
		assert.NoError(t, err, "the limits do not fail")
	})
	t.Run("bad cpuacct.usage", func(t *testing.T) {
		w := watch(t, mapFS(with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpuacct.usage": "-\n"})))
		s, err := w.Stats()
		var pe *parseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/app/cpuacct.usage", pe.File)
		assert.Equal(t, cpuStats{Dir: "/sys/fs/cgroup/cpu,cpuacct/app", Periods: 7, ThrottledPeriods: 2, ThrottledTime: 3000}, s.CPU)
	})
	t.Run("bad cpu.max", func(t *testing.T) {
		// No limit to read: the statistics come from the process's cgroup.
		w := watch(t, v2(map[string]string{"sys/fs/cgroup/app/cpu.max": "x\n"}))
		s, err := w.Stats()
		require.NoError(t, err)
		assert.Equal(t, "/sys/fs/cgroup/app", s.CPU.Dir)
		assert.Equal(t, uint64(1), s.CPU.Periods)
	})
	t.Run("bad pressure and events", func(t *testing.T) {
		w := watch(t, v2(map[string]string{
			"sys/fs/cgroup/app/memory.current":  "4096\n",
			"sys/fs/cgroup/app/memory.events":   "max x\n",
			"sys/fs/cgroup/app/io.pressure":     "some total=y\n",
			"sys/fs/cgroup/app/memory.pressure": "some avg10=1.00 avg60=0.00 avg300=0.00 total=3\n",
		}))
		s, err := w.Stats()
		assert.ErrorContains(t, err, "/sys/fs/cgroup/app/memory.events:1")
		assert.ErrorContains(t, err, "/sys/fs/cgroup/app/io.pressure:1")
		assert.False(t, s.Memory.HasEvents)
		assert.False(t, s.Pressure.IO.HasSome)
		assert.True(t, s.Pressure.Memory.HasSome)
		assert.Equal(t, "/sys/fs/cgroup/app", s.Pressure.Dir)
	})
	t.Run("a file that cannot be opened", func(t *testing.T) {
		fsys := failOpen{v2(map[string]string{"sys/fs/cgroup/app/memory.current": "4096\n"}),
			map[string]bool{"sys/fs/cgroup/app/memory.current": true}}
		w := watch(t, fsys)
		lim, err := w.Read()
		require.NoError(t, err)
		assert.Equal(t, "/sys/fs/cgroup/app", lim.CPU.Source)
		s, err := w.Stats()
		assert.ErrorIs(t, err, syscall.EMFILE)
		assert.Empty(t, s.Memory.Dir)
		assert.Equal(t, uint64(1), s.CPU.Periods)
		lim2, err := w.Read()
		require.NoError(t, err, "Read does not see the statistics' error")
		assert.Equal(t, lim, lim2)
		// Opened again once it can be.
		delete(fsys.fail, "sys/fs/cgroup/app/memory.current")
		for i := 0; i < 64 && s.Memory.Dir == ""; i++ {
			_, err = w.Read()
			require.NoError(t, err)
			s, err = w.Stats()
		}
		require.NoError(t, err)
		assert.Equal(t, int64(4096), s.Memory.Usage)
	})
	t.Run("closed", func(t *testing.T) {
		w, err := NewWatcher(fixture("stats-v2"))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		_, err = w.Stats()
		assert.ErrorIs(t, err, fs.ErrClosed)
	})
}

// The statistics follow the limit to another directory, and the process to
// another cgroup.
func TestWatcherStatsFollow(t *testing.T) {
	fsys := mapFS(map[string]string{
		"proc/self/cgroup":                     "0::/pod/a\n",
		"proc/self/mountinfo":                  v2Mounts,
		"sys/fs/cgroup/pod/cgroup.controllers": "cpu memory\n",
		"sys/fs/cgroup/pod/cpu.max":            "50000 100000\n",
		"sys/fs/cgroup/pod/cpu.stat":           "nr_periods 10\nnr_throttled 5\nthrottled_usec 100\n",
		"sys/fs/cgroup/pod/a/cpu.max":          "max 100000\n",
		"sys/fs/cgroup/pod/a/cpu.stat":         "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		"sys/fs/cgroup/pod/a/memory.current":   "100\n",
		"sys/fs/cgroup/pod/b/cpu.max":          "max 100000\n",
		"sys/fs/cgroup/pod/b/memory.current":   "200\n",
	})
	w := watch(t, fsys)
	s, err := w.Stats()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/pod", s.CPU.Dir)
	assert.Equal(t, uint64(5), s.CPU.ThrottledPeriods)

	// A resize puts a tighter limit on the container: its cpu.stat is read
	// from then on.
	fsys["sys/fs/cgroup/pod/a/cpu.max"].Data = []byte("20000 100000\n")
	fsys["sys/fs/cgroup/pod/a/cpu.stat"].Data = []byte("nr_periods 3\nnr_throttled 2\nthrottled_usec 7\n")
	s, err = w.Stats()
	require.NoError(t, err)
	assert.Equal(t, cpuStats{Dir: "/sys/fs/cgroup/pod/a", Periods: 3, ThrottledPeriods: 2, ThrottledTime: 7 * time.Microsecond}, s.CPU)
	assert.Equal(t, int64(100), s.Memory.Usage)

	// The process moves to b.
	fsys["proc/self/cgroup"].Data = []byte("0::/pod/b\n")
	_, err = w.Read()
	require.NoError(t, err)
	s, err = w.Stats()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/pod", s.CPU.Dir)
	assert.Equal(t, "/sys/fs/cgroup/pod/b", s.Memory.Dir)
	assert.Equal(t, int64(200), s.Memory.Usage)
}

// TestWatcherStatsAllocs: a scrape (Read and Stats) of open files allocates
// nothing, on v1 and on v2.
func TestWatcherStatsAllocs(t *testing.T) {
	for _, name := range []string{"stats-v2", "stats-v1"} {
		t.Run(name, func(t *testing.T) {
			w := watch(t, fixture(name))
			if _, err := w.Stats(); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := w.Read(); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Stats(); err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// BenchmarkWatcherStats measures one scrape's reading, Read and Stats, on
// the fixtures and on the live system.
func BenchmarkWatcherStats(b *testing.B) {
	for _, name := range []string{"stats-v2", "stats-v1", "live"} {
		b.Run(name, func(b *testing.B) {
			fsys := fixture(name)
			if name == "live" {
				fsys = os.DirFS("/")
			}
			w, err := NewWatcher(fsys)
			if errors.Is(err, ErrNoCgroup) {
				b.Skipf("skipped: no cgroup here: %v", err)
			}
			require.NoError(b, err)
			defer w.Close()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := w.Read(); err != nil {
					b.Fatal(err)
				}
				if _, err := w.Stats(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The stats files are tried only in the hierarchy's version: a v2 cgroup
// with v1-named files has no v1 statistics.
func TestStatsVersionNames(t *testing.T) {
	w := watch(t, mapFS(with(v2Base, map[string]string{
		"sys/fs/cgroup/app/memory.usage_in_bytes": "5\n",
		"sys/fs/cgroup/app/memory.failcnt":        "5\n",
	})))
	s, err := w.Stats()
	require.NoError(t, err)
	assert.Empty(t, s.Memory.Dir)
	assert.False(t, s.Memory.HasEvents)
}

// On a hybrid host with memory on cgroup v2, the pressure files come from
// the v2 directory, not from the v1 cpu one.
func TestStatsHybridPressure(t *testing.T) {
	w := watch(t, mapFS(map[string]string{
		"proc/self/cgroup": "3:cpu,cpuacct:/app\n0::/app\n",
		"proc/self/mountinfo": "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
			"31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/cpu,cpuacct/app/cpu.stat":         "nr_periods 1\nnr_throttled 1\nthrottled_time 1\n",
		"sys/fs/cgroup/unified/app/memory.current":       "4096\n",
		"sys/fs/cgroup/unified/app/cpu.pressure":         "some avg10=1.00 avg60=0.00 avg300=0.00 total=5\n",
		"sys/fs/cgroup/unified/cgroup.controllers":       "memory\n",
		"sys/fs/cgroup/unified/cgroup.subtree_control":   "memory\n",
		"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": "-1\n",
	}))
	lim, err := w.Read()
	require.NoError(t, err)
	require.Equal(t, V1, lim.CPU.Version)
	require.Equal(t, V2, lim.Memory.Version)
	s, err := w.Stats()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/app", s.CPU.Dir)
	assert.Equal(t, "/sys/fs/cgroup/unified/app", s.Memory.Dir)
	assert.Equal(t, "/sys/fs/cgroup/unified/app", s.Pressure.Dir)
	assert.Equal(t, 5*time.Microsecond, s.Pressure.CPU.Some.Total)
}

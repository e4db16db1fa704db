package fitgo

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// cpuReading is a reading of dir's cpu.stat with these counters.
func cpuReading(dir string, periods, throttled uint64) cgroup.Stats {
	var s cgroup.Stats
	s.CPU.Dir, s.CPU.Periods, s.CPU.ThrottledPeriods = dir, periods, throttled
	s.CPU.ThrottledTime = time.Duration(throttled) * 10 * time.Millisecond
	return s
}

// TestThrottleHintWindows drives the detector with counted readings: a
// window of 3 readings, 100 periods per reading.
func TestThrottleHintWindows(t *testing.T) {
	h := throttleHint{window: 3, quiet: 9}
	var warned []int
	periods, throttled := uint64(0), uint64(0)
	for i := 0; i < 30; i++ {
		periods += 100
		if i >= 10 { // from reading 10 on, 40% of the periods are throttled
			throttled += 40
		} else {
			throttled += 10
		}
		if d, warn := h.step(cpuReading("/a", periods, throttled)); warn {
			warned = append(warned, i)
			assert.Equal(t, throttling{periods: 300, throttled: 120, time: 1200 * time.Millisecond, readings: 3}, d)
			assert.InDelta(t, 0.4, d.share(), 1e-12)
		}
	}
	// Windows end at readings 3, 6, 9, 12, ...; 12 is the first whose three
	// intervals are all at 40% (10, 11, 12). Then nine readings of quiet.
	assert.Equal(t, []int{12, 21}, warned)
}

func TestThrottleHintQuiet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		read  func(i int) cgroup.Stats
		warns int
	}{
		{"below the threshold", func(i int) cgroup.Stats { return cpuReading("/a", uint64(100*i), uint64(20*i)) }, 0},
		{"at the threshold", func(i int) cgroup.Stats { return cpuReading("/a", uint64(100*i), uint64(25*i)) }, 1},
		{"too few periods to tell", func(i int) cgroup.Stats { return cpuReading("/a", uint64(10*i), uint64(10*i)) }, 0},
		{"no cpu.stat", func(i int) cgroup.Stats { return cgroup.Stats{} }, 0},
		// A resize storm: every reading comes from another directory.
		{"the limit moves at every reading", func(i int) cgroup.Stats {
			return cpuReading(fmt.Sprintf("/d%d", i%2), uint64(100*i), uint64(90*i))
		}, 0},
		// The cgroup is made anew at every other reading: counters go down.
		{"counters going down", func(i int) cgroup.Stats {
			return cpuReading("/a", uint64(100*(i%2)), uint64(90*(i%2)))
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := throttleHint{window: 3, quiet: 100}
			warns := 0
			for i := 1; i <= 50; i++ {
				if _, warn := h.step(tc.read(i)); warn {
					warns++
				}
			}
			assert.Equal(t, tc.warns, warns)
		})
	}
	h := newThrottleHint(time.Second)
	assert.Equal(t, throttleHint{window: 60, quiet: 3600}, h)
	assert.Equal(t, 6000, newThrottleHint(10*time.Millisecond).window)
	assert.Equal(t, 1, newThrottleHint(time.Hour).window)
}

// throttledFS is a v2 cgroup limited to 1.5 CPUs whose cpu.stat the test
// rewrites.
func throttledFS() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"proc/self/cgroup":           file("0::/app\n"),
		"proc/self/mountinfo":        file("35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/app/cpu.max":  file("150000 100000\n"),
		"sys/fs/cgroup/app/cpu.stat": file("nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"),
	}
}

// TestHintedSource: the blank import's Source logs one Warn line through its
// logger once a window of readings was throttled, and nothing without a
// logger.
func TestHintedSource(t *testing.T) {
	for _, withLogger := range []bool{true, false} {
		fsys := throttledFS()
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		log := func() *slog.Logger { return logger }
		if !withLogger {
			log = func() *slog.Logger { return nil }
		}
		src, err := openHinted(fsys, time.Minute/4, log)()
		require.NoError(t, err)
		for i := 1; i <= 12; i++ { // three windows of four readings
			fsys["sys/fs/cgroup/app/cpu.stat"].Data = []byte(fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_usec %d\n", 100*i, 60*i, 30000*i))
			lim, err := src.Read()
			require.NoError(t, err)
			cores, _ := lim.CPUQuota()
			require.Equal(t, 1.5, cores, "the limits are read as before")
		}
		require.NoError(t, src.Close())
		if !withLogger {
			assert.Empty(t, buf.String())
			continue
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 1, "one line, then quiet: %s", buf.String())
		t.Log(lines[0])
		for _, want := range []string{"level=WARN", `msg="fitgo: the CPU limit throttles this process"`,
			`throttled="60% of 400 periods"`, "throttled_time=120ms", "over=1m0s", "cpu_limit=1.5",
			"cpu_source=/sys/fs/cgroup/app", "GOMAXPROCS="} {
			assert.Contains(t, lines[0], want)
		}
	}
}

func TestLogHintConsider(t *testing.T) {
	lim := cgroup.Limits{CPU: cgroup.CPU{Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/app"}}
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	logHint(l, throttling{periods: 600, throttled: 300, time: time.Second, readings: 60}, time.Minute, lim, 2)
	assert.Contains(t, buf.String(), `consider="GOMAXPROCS 2 is above the limit of 1.5 cores: GOMAXPROCS 1 (FITGO=rounding=floor) fits it, or a limit of 2 cores"`)
	buf.Reset()
	logHint(l, throttling{periods: 600, throttled: 300}, time.Minute, lim, 1)
	assert.Contains(t, buf.String(), `consider="raise the CPU limit`)
	// Below one core, one P is the least: nothing to round down.
	lim.CPU.Quota = 50 * time.Millisecond
	buf.Reset()
	logHint(l, throttling{periods: 600, throttled: 300}, time.Minute, lim, 1)
	assert.Contains(t, buf.String(), `consider="raise the CPU limit`)
	buf.Reset()
	logHint(l, throttling{periods: 600, throttled: 300}, time.Minute, lim, 2)
	assert.Contains(t, buf.String(), `consider="GOMAXPROCS 2 is above the limit of 0.5 cores: GOMAXPROCS 1 fits it, or a limit of 2 cores"`)
}

// TestHintedReadAllocatesNothing: with no warning due, a reading of the
// blank import's Source allocates nothing.
func TestHintedReadAllocatesNothing(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	src, err := openHinted(throttledFS(), time.Second, func() *slog.Logger { return logger })()
	require.NoError(t, err)
	defer src.Close()
	src.Read()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := src.Read(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

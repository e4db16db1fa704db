package fitgo

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
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

// started is the start-up lines' channel of openHinted once start-up is
// done and the lines were logged: closed.
func started() <-chan func() {
	c := make(chan func())
	close(c)
	return c
}

// hintLines drives the blank import's Source over throttledFS (1.5 cores)
// through three windows of throttled readings, with procs as maxprocs'
// Status, and returns the lines it logged (log: whether it has a logger).
func hintLines(t *testing.T, log bool, procs func() maxprocs.Result) []string {
	t.Helper()
	fsys := throttledFS()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	getLog := func() *slog.Logger { return logger }
	if !log {
		getLog = func() *slog.Logger { return nil }
	}
	src, err := openHinted(fsys, time.Minute/4, getLog, procs, started())()
	require.NoError(t, err)
	for i := 1; i <= 12; i++ { // three windows of four readings
		fsys["sys/fs/cgroup/app/cpu.stat"].Data = []byte(fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_usec %d\n", 100*i, 60*i, 30000*i))
		lim, err := src.Read()
		require.NoError(t, err)
		cores, _ := lim.CPUQuota()
		require.Equal(t, 1.5, cores, "the limits are read as before")
	}
	require.NoError(t, src.Close())
	if buf.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

// TestHintedSource: the blank import's Source logs one Warn line through its
// logger once a window of readings was throttled, and nothing without a
// logger. Here maxprocs follows the cgroup's 1.5 cores with GOMAXPROCS 2.
func TestHintedSource(t *testing.T) {
	status := func() maxprocs.Result {
		return maxprocs.Result{After: 2, Limit: 1.5, Source: "/sys/fs/cgroup/app", Policy: maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 1},
			NumCPU: 8, Following: true}
	}
	assert.Empty(t, hintLines(t, false, status))
	lines := hintLines(t, true, status)
	require.Len(t, lines, 1, "one line, then quiet: %s", lines)
	t.Log(lines[0])
	for _, want := range []string{"level=WARN", `msg="fitgo: the CPU limit throttles this process"`,
		`throttled="60% of 400 periods"`, "throttled_time=120ms", "over=1m0s", "cpu_limit=1.5",
		"cpu_source=/sys/fs/cgroup/app", "GOMAXPROCS=2",
		`consider="GOMAXPROCS 2 is above the limit of 1.5 cores: GOMAXPROCS 1 (FITGO=rounding=floor) fits it, or a limit of 2 cores"`} {
		assert.Contains(t, lines[0], want)
	}
}

// TestHintUpperLimit: the hint speaks of the limit maxprocs fits GOMAXPROCS
// to, here its UpperLimit (1 core) below the cgroup's 1.5.
func TestHintUpperLimit(t *testing.T) {
	lim, err := cgroup.ReadFS(throttledFS())
	require.NoError(t, err)
	r, err := maxprocs.Plan(maxprocs.Options{Limits: &lim, UpperLimit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, r.After)
	lines := hintLines(t, true, func() maxprocs.Result { return r })
	require.Len(t, lines, 1)
	for _, want := range []string{"cpu_limit=1 ", "cpu_source=Options.UpperLimit", "GOMAXPROCS=1 ", `consider="raise the CPU limit`} {
		assert.Contains(t, lines[0], want)
	}
}

// TestHintCPULimitEnv: the blank import's hint speaks of the limit it fits
// GOMAXPROCS to, FITGO_CPU_LIMIT included. FITGO_CPU_LIMIT is read from the
// start-up environment, so the test runs itself in a child that has it.
func TestHintCPULimitEnv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the CPU limit is fitted on Linux only")
	}
	if os.Getenv("FITGO_TEST_HINT_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHintCPULimitEnv$", "-test.count=1", "-test.v")
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "GOMAXPROCS" && !strings.HasPrefix(k, "FITGO") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "FITGO_TEST_HINT_CHILD=1", "FITGO_CPU_LIMIT=10m") // below any real quota
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestHintCPULimitEnv", "%s", out)
		return
	}
	r := Startup().MaxProcs.Status()
	require.Equal(t, "$FITGO_CPU_LIMIT", r.Source, "maxprocs fits GOMAXPROCS to FITGO_CPU_LIMIT: %v", r)
	lines := hintLines(t, true, Startup().MaxProcs.Status)
	require.Len(t, lines, 1)
	t.Log(lines[0])
	for _, want := range []string{"cpu_limit=0.01 ", "cpu_source=$FITGO_CPU_LIMIT"} {
		assert.Contains(t, lines[0], want)
	}
}

// TestLogHintConsider: the advice, from maxprocs' Status and the cgroup's
// limit (1.5 cores unless said).
func TestLogHintConsider(t *testing.T) {
	ceil := maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 1}
	app := "/sys/fs/cgroup/app"
	for _, tc := range []struct {
		name          string
		quota         time.Duration // of a 100ms period; 0: no cgroup limit
		r             maxprocs.Result
		limit, source string
		consider      string
	}{
		{"fitgo's ceil above the limit", 150, maxprocs.Result{After: 2, Limit: 1.5, Source: app, Policy: ceil, NumCPU: 8, Following: true},
			"1.5", app, "GOMAXPROCS 2 is above the limit of 1.5 cores: GOMAXPROCS 1 (FITGO=rounding=floor) fits it, or a limit of 2 cores"},
		{"at the limit", 150, maxprocs.Result{After: 1, Limit: 1.5, Source: app, Policy: ceil, NumCPU: 8, Following: true},
			"1.5", app, "raise the CPU limit"},
		// Below one core, one P is the least: nothing to round down.
		{"one P below one core", 50, maxprocs.Result{After: 1, Limit: 0.5, Source: app, Policy: ceil, NumCPU: 8, Following: true},
			"0.5", app, "raise the CPU limit"},
		{"two Ps below one core, not fitgo's", 50, maxprocs.Result{After: 2, Limit: 0.5, Source: app, Policy: ceil, NumCPU: 8},
			"0.5", app, "GOMAXPROCS 2 is above the limit of 0.5 cores: GOMAXPROCS 1 fits it, or a limit of 2 cores"},
		// FITGO_CPU_LIMIT=2500m under a cgroup limit of 4 cores: fitgo's 3
		// is above 2.5, which the cgroup's 4 would hide.
		{"FITGO_CPU_LIMIT below the cgroup's", 400, maxprocs.Result{After: 3, Limit: 2.5, Source: "$FITGO_CPU_LIMIT", Policy: ceil, NumCPU: 8, Following: true},
			"2.5", "$FITGO_CPU_LIMIT", "GOMAXPROCS 3 is above the limit of 2.5 cores: GOMAXPROCS 2 (FITGO=rounding=floor) fits it, or a limit of 3 cores"},
		{"UpperLimit, no cgroup limit", 0, maxprocs.Result{After: 2, Limit: 1.5, Source: "Options.UpperLimit", Policy: ceil, NumCPU: 8, Following: true},
			"1.5", "Options.UpperLimit", "GOMAXPROCS 2 is above the limit of 1.5 cores: GOMAXPROCS 1 (FITGO=rounding=floor) fits it, or a limit of 2 cores"},
		// The policy's minimum holds for what fits, as when fitgo applies it.
		{"the policy's minimum", 150, maxprocs.Result{After: 2, Limit: 1.5, Source: app, Policy: maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 2}, NumCPU: 8, Following: true},
			"1.5", app, "raise the CPU limit"},
		{"maxprocs off: the cgroup's limit", 150, maxprocs.Result{After: 2, Reason: "not applied"},
			"1.5", app, "GOMAXPROCS 2 is above the limit of 1.5 cores: GOMAXPROCS 1 fits it, or a limit of 2 cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lim cgroup.Limits
			if tc.quota > 0 {
				lim.CPU = cgroup.CPU{Quota: tc.quota * time.Millisecond, Period: 100 * time.Millisecond, Source: app}
			}
			var buf bytes.Buffer
			logHint(slog.New(slog.NewTextHandler(&buf, nil)), throttling{periods: 600, throttled: 300, time: time.Second, readings: 60}, time.Minute, lim, tc.r)
			assert.Contains(t, buf.String(), " cpu_limit="+tc.limit+" ")
			assert.Contains(t, buf.String(), " cpu_source="+tc.source+" ")
			assert.Contains(t, buf.String(), ` consider="`+tc.consider)
		})
	}
}

// TestHintedReadAllocatesNothing: with no warning due, a reading of the
// blank import's Source allocates nothing.
func TestHintedReadAllocatesNothing(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	src, err := openHinted(throttledFS(), time.Second, func() *slog.Logger { return logger }, (*maxprocs.Fit)(nil).Status, started())()
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

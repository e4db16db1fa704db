package vmtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
)

// Guest shape: the scenarios expect 4 vCPUs (the affinity count that caps
// GOMAXPROCS) and memory well above the largest memory limit they set (512 MiB).
const (
	guestCPUs      = 4
	guestMemoryMiB = 1536
	// bootTimeout bounds one boot, scenarios included. A boot takes about 4 s
	// here and the longest suite about 20 s more.
	bootTimeout = 3 * time.Minute
)

// probes are the programs put in the guest's /bin, built from these packages;
// "DIR:PKG" builds PKG in the module in DIR.
var probes = map[string]string{
	"plain":    "./probe/plain",
	"explicit": "./probe/explicit",
	"blank":    "./probe/blank",
	"prom":     "../../../fitgoprom:./internal/promprobe",
	"sidecar":  "../testprog/sidecar",
}

var (
	workDir string // removed by TestMain

	setupOnce sync.Once
	setupHost Host
	setupInit string // path of the initramfs
	setupErr  error
	setupMiss []string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fitgo-vmtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mode is FITGO_VMTEST: "require" turns a missing host piece into a failure,
// "skip" skips the boots.
func mode() string { return os.Getenv("FITGO_VMTEST") }

// setup finds the host's pieces and builds the probes and the initramfs once
// for all tests. It skips the test when a piece is missing, or fails it under
// FITGO_VMTEST=require.
func setup(t *testing.T) (Host, string) {
	t.Helper()
	switch {
	case mode() == "skip":
		t.Skip("FITGO_VMTEST=skip")
	case testing.Short() && mode() != "require":
		t.Skip("boots qemu; skipped with -short (FITGO_VMTEST=require runs it anyway)")
	}
	setupOnce.Do(func() {
		setupHost, setupMiss = LookupHost(CacheDir())
		if len(setupMiss) > 0 {
			return
		}
		setupInit, setupErr = buildInitramfs(setupHost.Busybox)
	})
	if len(setupMiss) > 0 {
		msg := "vm tests need:\n\t" + strings.Join(setupMiss, "\n\t")
		if mode() == "require" {
			t.Fatal(msg + "\n(FITGO_VMTEST=require)")
		}
		t.Skip(msg + "\n(FITGO_VMTEST=require makes this a failure)")
	}
	require.NoError(t, setupErr)
	return setupHost, setupInit
}

// buildInitramfs builds the probes with CGO_ENABLED=0 and writes the
// initramfs into workDir.
func buildInitramfs(busybox string) (string, error) {
	bin := filepath.Join(workDir, "bin")
	progs := map[string]string{}
	for name, pkg := range probes {
		out := filepath.Join(bin, name)
		dir, pkg, inModule := strings.Cut(pkg, ":")
		if !inModule {
			dir, pkg = ".", dir
		}
		if err := BuildStatic(dir, out, pkg); err != nil {
			return "", err
		}
		progs[name] = out
	}
	r, err := NewInitramfs(busybox, progs)
	if err != nil {
		return "", err
	}
	path := filepath.Join(workDir, "initramfs.cpio")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := r.WriteTo(f); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// boot runs a suite in a fresh guest and returns its parsed console. Each
// FITGO-ERROR line fails the test; so does a guest that did not finish.
func boot(t *testing.T, suite string) *Console {
	t.Helper()
	host, initramfs := setup(t)
	m := Machine{
		QEMU:      host.QEMU,
		Kernel:    host.Kernel,
		Initramfs: initramfs,
		CPUs:      guestCPUs,
		MemoryMiB: guestMemoryMiB,
		Cmdline:   []string{"fitgo.suite=" + suite},
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	var out bytes.Buffer
	var console io.Writer = &out
	if dir := os.Getenv("FITGO_VMTEST_CONSOLE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, suite+".console"))
		require.NoError(t, err)
		defer f.Close()
		console = io.MultiWriter(&out, f)
	}
	// Once the guest has printed FITGO-DONE its results are complete: give
	// it poweroffGrace to power off, then kill qemu, so that a guest stuck
	// in power-off does not fail the suite.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := &doneWatch{w: console, stop: func() { time.AfterFunc(poweroffGrace, stop) }}

	start := time.Now()
	err := m.Run(runCtx, done)
	t.Logf("suite %s: qemu ran %v", suite, time.Since(start).Round(time.Millisecond))
	if err != nil && done.seen && ctx.Err() == nil {
		t.Logf("the guest finished but did not power off within %v; qemu killed", poweroffGrace)
		err = nil
	}
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, out.Bytes())
	}
	c, err := ParseConsole(out.Bytes())
	require.NoError(t, err, "console:\n%s", out.Bytes())
	logSteps(t, c.Steps)
	for _, e := range c.Errors {
		t.Errorf("guest: %s", e)
	}
	if !c.Done {
		t.Fatalf("the guest did not finish its suite; console:\n%s", out.Bytes())
	}
	if t.Failed() {
		t.Logf("console:\n%s", out.Bytes())
	}
	return c
}

// poweroffGrace is how long qemu may take to exit after FITGO-DONE.
const poweroffGrace = 15 * time.Second

// doneWatch passes the console on to w and calls stop once, when a line
// "FITGO-DONE" has gone through.
type doneWatch struct {
	w    io.Writer
	stop func()
	tail []byte // the end of the output so far, to find a marker split between writes
	seen bool
}

func (d *doneWatch) Write(p []byte) (int, error) {
	if !d.seen {
		d.tail = append(d.tail, p...)
		if bytes.Contains(d.tail, []byte("\n"+MarkDone+"\r")) || bytes.Contains(d.tail, []byte("\n"+MarkDone+"\n")) {
			d.seen = true
			d.stop()
		}
		if n := len(MarkDone) + 2; len(d.tail) > n {
			d.tail = append(d.tail[:0], d.tail[len(d.tail)-n:]...)
		}
	}
	return d.w.Write(p)
}

// logSteps logs when the guest's suite started (its boot time) and how long
// each scenario took.
func logSteps(t *testing.T, steps []Step) {
	t.Helper()
	var b strings.Builder
	for i, st := range steps {
		if i == 0 {
			fmt.Fprintf(&b, "guest booted in %.1fs;", st.Uptime.Seconds())
			continue
		}
		fmt.Fprintf(&b, " %s %.1fs", steps[i-1].Name, (st.Uptime - steps[i-1].Uptime).Seconds())
	}
	if b.Len() > 0 {
		t.Log(b.String())
	}
}

// one decodes the only result of scenario and probe into v.
func one(t *testing.T, c *Console, scenario, probe string, v any) {
	t.Helper()
	rs := c.Find(scenario, probe)
	require.Len(t, rs, 1, "results of scenario %s, probe %s", scenario, probe)
	t.Logf("%s %s: %s", scenario, probe, rs[0].JSON)
	require.NoError(t, json.Unmarshal(rs[0].JSON, v))
}

// runtimeResult is what "plain runtime" prints.
type runtimeResult struct {
	GOMAXPROCS     int    `json:"gomaxprocs"`
	GOMEMLIMIT     int64  `json:"gomemlimit"`
	NumCPU         int    `json:"numcpu"`
	DefaultGODEBUG string `json:"default_godebug"`
}

// filesResult is what "plain files" prints.
type filesResult struct {
	Files  map[string]string `json:"files"`
	Errors map[string]string `json:"errors"`
}

// wantLimits is what cgroup.Read should report. Zero cores, max or high
// means no such limit.
type wantLimits struct {
	version    cgroup.Version
	dir        string // the process's cgroup directory, for CPU and memory (v2)
	cpuDir     string // v1: the cpu hierarchy's directory, if not dir
	cores      float64
	cpuSource  string
	max        int64
	maxSource  string
	high       int64
	highSource string
}

// checkLimits compares what cgroup.Read returned in the guest with want.
func checkLimits(t *testing.T, got report.Limits, want wantLimits) {
	t.Helper()
	assert.Empty(t, got.Err, "error from cgroup.Read")
	assert.Empty(t, got.CPUErr)
	assert.Empty(t, got.MemoryErr)
	cpuDir := cmp.Or(want.cpuDir, want.dir)
	assert.Equal(t, want.version, got.CPU.Version, "CPU version")
	assert.Equal(t, want.version, got.Memory.Version, "memory version")
	assert.Equal(t, cpuDir, got.CPU.Dir, "CPU dir")
	assert.Equal(t, want.dir, got.Memory.Dir, "memory dir")

	cores, ok := got.CPUQuota()
	assert.Equal(t, want.cores != 0, ok, "CPU limit present")
	assert.InDelta(t, want.cores, cores, 1e-9, "cores")
	assert.Equal(t, want.cpuSource, got.CPU.Source, "CPU source")

	max, ok := got.MemoryMax()
	assert.Equal(t, want.max != 0, ok, "memory.max present")
	assert.Equal(t, want.max, max, "memory max")
	assert.Equal(t, want.maxSource, got.Memory.MaxSource, "memory max source")

	high, ok := got.MemoryHigh()
	assert.Equal(t, want.high != 0, ok, "memory.high present")
	assert.Equal(t, want.high, high, "memory high")
	assert.Equal(t, want.highSource, got.Memory.HighSource, "memory high source")
}

// checkThrottle checks cpu.stat's change while the burn probe kept b.Threads
// goroutines spinning under a quota of quotaCores (period 100 ms), and the
// reader's last values against the kernel's files read just before and just
// after it. timeKey is the kernel's name for the throttled time in cpu.stat
// and unit its unit.
//
// Two kinds of checks: what the kernel guarantees whatever the host does, and
// bands that hold when the guest gets the CPU time it asks for. On a busy host
// qemu's vCPU threads wait for a core while the guest's clock runs on: the
// threads then use less than the quota and late period timers count missed
// periods as throttled, so those bands are wide, and skipped (with the
// figures) when the threads did not get the CPU to use the quota.
func checkThrottle(t *testing.T, b report.Burn, quotaCores float64, timeKey string, unit time.Duration) {
	t.Helper()
	const period = 100 * time.Millisecond
	d := b.Delta
	wall := b.Wall.Seconds()
	usage := d.Usage.Seconds()
	t.Logf("%v wall: %d periods, %d throttled, throttled time %v, usage %v (quota × wall = %.3fs)",
		b.Wall, d.Periods, d.ThrottledPeriods, d.ThrottledTime, d.Usage, quotaCores*wall)
	require.True(t, d.HasUsage, "usage available")

	// Guaranteed. One period per 100 ms in which the cgroup had runnable
	// tasks, which it had all along.
	assert.InDelta(t, wall/period.Seconds(), float64(d.Periods), 3, "periods")
	assert.Positive(t, d.ThrottledPeriods, "throttled periods")
	assert.LessOrEqual(t, d.ThrottledPeriods, d.Periods, "throttled periods")
	// The quota holds: at most quota × wall, plus the period in flight at each
	// reading.
	assert.LessOrEqual(t, usage, quotaCores*(wall+2*period.Seconds()), "usage above the quota")
	// The kernel adds up throttled time over the CPUs' run queues: above zero,
	// below guestCPUs × wall.
	assert.Positive(t, d.ThrottledTime, "throttled time")
	assert.LessOrEqual(t, d.ThrottledTime.Seconds(), float64(guestCPUs)*wall, "throttled time")

	// The reader against the kernel's files around its last reading.
	before, after := parseRaw(t, b.RawBefore, timeKey, unit), parseRaw(t, b.RawAfter, timeKey, unit)
	got := b.After
	for _, c := range []struct {
		name        string
		lo, got, hi int64
	}{
		{"nr_periods", int64(before.Periods), int64(got.Periods), int64(after.Periods)},
		{"nr_throttled", int64(before.ThrottledPeriods), int64(got.ThrottledPeriods), int64(after.ThrottledPeriods)},
		{timeKey, int64(before.ThrottledTime), int64(got.ThrottledTime), int64(after.ThrottledTime)},
		{"usage", int64(before.Usage), int64(got.Usage), int64(after.Usage)},
	} {
		assert.True(t, c.lo <= c.got && c.got <= c.hi, "%s: the reader says %d, the kernel %d before and %d after", c.name, c.got, c.lo, c.hi)
	}

	// Bands. The threads want b.Threads CPUs against quotaCores: when the
	// guest gets the CPU time it asks for, they use the quota (0.4 of it at
	// least), most periods end throttled, and of the b.Threads × wall they
	// wanted and did not get, much was spent throttled. On a host too busy to
	// run qemu's vCPUs that much, the bands say nothing about the reader.
	if usage < 0.4*quotaCores*wall {
		load, _ := os.ReadFile("/proc/loadavg")
		t.Skipf("bands skipped: the guest got %.3fs of CPU against a quota of %.3fs over %v, its vCPUs waiting for the host's cores (host load %s)",
			usage, quotaCores*wall, b.Wall, strings.Fields(string(load) + " ?")[0])
	}
	assert.GreaterOrEqual(t, float64(d.ThrottledPeriods), 0.5*float64(d.Periods), "throttled periods")
	assert.GreaterOrEqual(t, d.ThrottledTime.Seconds(), 0.25*(float64(b.Threads)*wall-usage), "throttled time")
}

// parseRaw reads the counters of the kernel's cpu.stat (and cpuacct.usage on
// v1, where cpu and cpuacct are mounted together) as the test sees them.
func parseRaw(t *testing.T, raw map[string]string, timeKey string, unit time.Duration) report.CPU {
	t.Helper()
	kv := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(raw["cpu.stat"]), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "cpu.stat line %q", line)
		kv[k] = n
	}
	s := report.CPU{
		Periods:          uint64(kv["nr_periods"]),
		ThrottledPeriods: uint64(kv["nr_throttled"]),
		ThrottledTime:    time.Duration(kv[timeKey]) * unit,
		Usage:            time.Duration(kv["usage_usec"]) * time.Microsecond,
	}
	if acct, ok := raw["cpuacct.usage"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(acct), 10, 64)
		require.NoError(t, err)
		s.Usage = time.Duration(n)
	}
	return s
}

// mountRoot returns the root field of the mountinfo line of mount point
// point, or "" when there is none.
func mountRoot(mountinfo, point string) string {
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == point {
			return f[3]
		}
	}
	return ""
}

// fitgoMemLimit is GOMEMLIMIT under fitgo's default policy: 90% of the limit.
func fitgoMemLimit(limit int64) int64 { return int64(math.Floor(0.9 * float64(limit))) }

// wantBlank is what the blank import should have done at init.
type wantBlank struct {
	procs     int     // GOMAXPROCS after init
	before    int     // GOMAXPROCS before fitgo (the runtime's default)
	cores     float64 // the CPU limit it used; 0 when none
	cpuSource string
	mem       int64  // the memory limit it used; 0 when none
	memFrom   string // the file that gave it
	memSource string
}

// checkBlank compares what the blank-import probe reported with want.
func checkBlank(t *testing.T, b report.Blank, want wantBlank) {
	t.Helper()
	f := b.Fitgo
	assert.Empty(t, f.Err, "panic in fitgo's init")
	assert.Empty(t, f.MaxProcs.Err)
	assert.Empty(t, f.MemLimit.Err)

	assert.Equal(t, want.procs, b.Runtime.GOMAXPROCS, "GOMAXPROCS")
	assert.Equal(t, want.before, f.MaxProcs.Before, "GOMAXPROCS before fitgo")
	assert.Equal(t, want.procs, f.MaxProcs.After)
	assert.Equal(t, want.procs != want.before, f.MaxProcs.Changed)
	assert.InDelta(t, want.cores, f.MaxProcs.Limit, 1e-9, "CPU limit")
	assert.Equal(t, want.cpuSource, f.MaxProcs.Source, "CPU limit source")
	assert.Equal(t, guestCPUs, f.MaxProcs.NumCPU)
	if want.cores == 0 {
		assert.Equal(t, "no CPU limit", f.MaxProcs.Reason)
	}

	wantMem := int64(math.MaxInt64)
	if want.mem != 0 {
		wantMem = fitgoMemLimit(want.mem)
	}
	assert.Equal(t, wantMem, b.Runtime.GOMEMLIMIT, "GOMEMLIMIT")
	assert.Equal(t, wantMem, f.MemLimit.After)
	assert.Equal(t, want.mem, f.MemLimit.Limit, "memory limit")
	assert.Equal(t, want.memFrom, f.MemLimit.From)
	assert.Equal(t, want.memSource, f.MemLimit.Source, "memory limit source")
	if want.mem == 0 {
		assert.Equal(t, "no memory limit", f.MemLimit.Reason)
	}

	// The refresh loop runs and follows both knobs.
	assert.True(t, f.MaxProcsStatus.Following, "following GOMAXPROCS: %s", f.MaxProcsStatus.Reason)
	assert.True(t, f.MemLimitStatus.Following, "following GOMEMLIMIT: %s", f.MemLimitStatus.Reason)
}

// checkResize checks that the blank import's refresh loop moved both knobs
// from the values in from to those in to within two refresh intervals of the
// limits' change, written between the times start and end (Unix ns).
func checkResize(t *testing.T, w report.Watch, start, end int64, from, to report.Sample) {
	t.Helper()
	require.NotEmpty(t, w.Samples)
	first, last := w.Samples[0], w.Samples[len(w.Samples)-1]
	assert.Less(t, first.UnixNano, start, "the probe started before the limits changed")
	assert.Equal(t, from.GOMAXPROCS, first.GOMAXPROCS, "GOMAXPROCS at start")
	assert.Equal(t, from.GOMEMLIMIT, first.GOMEMLIMIT, "GOMEMLIMIT at start")
	assert.Equal(t, to.GOMAXPROCS, last.GOMAXPROCS, "GOMAXPROCS after the resize")
	assert.Equal(t, to.GOMEMLIMIT, last.GOMEMLIMIT, "GOMEMLIMIT after the resize")

	interval := w.Fitgo.MaxProcs.Refresh
	require.Positive(t, interval, "refresh interval")
	assert.Equal(t, interval, w.Fitgo.MemLimit.Refresh)
	var procsAt, memAt int64
	for _, s := range w.Samples[1:] {
		assert.Contains(t, []int{from.GOMAXPROCS, to.GOMAXPROCS}, s.GOMAXPROCS, "no value in between")
		assert.Contains(t, []int64{from.GOMEMLIMIT, to.GOMEMLIMIT}, s.GOMEMLIMIT, "no value in between")
		if procsAt == 0 && s.GOMAXPROCS == to.GOMAXPROCS {
			procsAt = s.UnixNano
		}
		if memAt == 0 && s.GOMEMLIMIT == to.GOMEMLIMIT {
			memAt = s.UnixNano
		}
	}
	for _, k := range []struct {
		name string
		at   int64
	}{{"GOMAXPROCS", procsAt}, {"GOMEMLIMIT", memAt}} {
		delay := time.Duration(k.at - end)
		t.Logf("%s followed %v after the write (refresh interval %v, polled every %v)", k.name, delay, interval, w.Poll)
		assert.GreaterOrEqual(t, k.at, start, "%s changed before the limits did", k.name)
		assert.LessOrEqual(t, delay, 2*interval, "%s followed too late", k.name)
	}
	// fitgo's own account of the change.
	for _, st := range []struct {
		following bool
		updates   int
		reason    string
	}{
		{w.Fitgo.MaxProcsStatus.Following, w.Fitgo.MaxProcsStatus.Updates, w.Fitgo.MaxProcsStatus.Reason},
		{w.Fitgo.MemLimitStatus.Following, w.Fitgo.MemLimitStatus.Updates, w.Fitgo.MemLimitStatus.Reason},
	} {
		assert.True(t, st.following, st.reason)
		assert.Equal(t, 1, st.updates)
	}
}

// TestThrottleBandsOfAStarvedGuest: the figures of a guest whose vCPUs waited
// for the host's cores (the threads used a quarter of the quota) skip the
// bands, after the kernel's guarantees and the reader's agreement with the
// kernel's files were checked, instead of failing them.
func TestThrottleBandsOfAStarvedGuest(t *testing.T) {
	after := report.CPU{Periods: 25, ThrottledPeriods: 8, ThrottledTime: 150 * time.Millisecond, Usage: 300 * time.Millisecond, HasUsage: true}
	raw := map[string]string{"cpu.stat": "nr_periods 25\nnr_throttled 8\nthrottled_time 150000000\n", "cpuacct.usage": "300000000\n"}
	b := report.Burn{Threads: 2, Wall: 2 * time.Second, After: after, RawBefore: raw, RawAfter: raw,
		Delta: report.CPU{Periods: 20, ThrottledPeriods: 5, ThrottledTime: 100 * time.Millisecond, Usage: 250 * time.Millisecond, HasUsage: true}}
	var skipped bool
	t.Run("check", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		checkThrottle(t, b, 0.5, "throttled_time", time.Nanosecond)
	})
	assert.True(t, skipped, "the bands are skipped")
}
